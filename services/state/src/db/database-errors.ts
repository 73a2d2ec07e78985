import { DocketError, isDocketError } from '@docket/contracts';
import { SQLSTATE, isDatabaseUnavailable, isRetryableTransactionFailure, sqlStateOf } from './sqlstate.js';

/**
 * Turns a database failure into the error a caller may see. pg errors carry
 * SQL fragments, constraint names and connection details in their messages;
 * none of that leaves the service: known conditions become typed errors
 * with fixed messages, anything else is rethrown for the INTERNAL path,
 * which logs only its name and SQLSTATE.
 */
export function translateDatabaseError(error: unknown): unknown {
  if (isDocketError(error)) return error;
  if (sqlStateOf(error) === SQLSTATE.queryCanceled) {
    return new DocketError('DEADLINE_EXCEEDED', 'the deadline passed before the database answered');
  }
  if (isDatabaseUnavailable(error) || isRetryableTransactionFailure(error)) {
    return new DocketError('UNAVAILABLE', 'the database is temporarily unavailable');
  }
  return error;
}
