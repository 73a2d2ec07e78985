import type { Int8Column, JsonbColumn, JsonObject } from './json.js';

/** Where a signal stands (see docket.common.v1.SignalState). */
export type SignalStateName = 'PENDING' | 'DELIVERED' | 'ACKNOWLEDGED' | 'UNKNOWN' | 'DISCARDED';

/** `job_signals`: a job's inbox, contiguous per-job sequences from 1. */
export interface JobSignalsTable {
  job_id: string;
  sequence: Int8Column;
  name: string;
  payload: JsonbColumn<JsonObject>;
  state: SignalStateName;
  received_at: Date;
  /** The attempt it was last delivered to. */
  attempt_id: string | null;
  /** Handed out again after the owner's ReconcileSignals REDELIVER. */
  redelivered: boolean;
}
