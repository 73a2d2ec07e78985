import type { ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema, type ErrorInfo } from '@docket/proto/google/rpc/error_details_pb.js';

/**
 * The `google.rpc.ErrorInfo` of an error received from (or about to be sent
 * by) a Docket service, if it has one. A Docket service puts one, with
 * domain `docket`, on every failure it decides itself; a failure without it
 * was raised by a transport, a proxy or the client library.
 */
export function errorInfoOf(error: ConnectError): ErrorInfo | undefined {
  return error.findDetails(ErrorInfoSchema)[0];
}
