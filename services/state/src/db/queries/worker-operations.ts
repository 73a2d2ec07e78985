import type { Selectable } from 'kysely';
import type { WorkerOperationsTable } from '../tables/index.js';

/**
 * A recorded worker operation: the first response of an operation id of
 * an incarnation. Read with `readOperations` and written with the batch's
 * effects by `writeJobSet`.
 */
export type WorkerOperationRow = Selectable<WorkerOperationsTable>;
