import { invalidField, isValidId } from '@docket/contracts';

/** A validated (job, sequence) position in a journal. */
export interface JobPosition {
  readonly jobId: string;
  /** Events strictly after this sequence are wanted; 0 for the whole journal. */
  readonly afterSequence: bigint;
}

/**
 * Validates the job id and the sequence a journal read or stream starts
 * after. A malformed id or a negative sequence is INVALID_ARGUMENT
 * (INVALID_FIELD); whether the job exists and is the caller's is for the
 * state service to say (NOT_FOUND either way).
 */
export function parseJobPosition(jobId: string, afterSequence: bigint): JobPosition {
  if (!isValidId(jobId)) throw invalidField('job_id', 'must be a Docket job id');
  if (afterSequence < 0n) throw invalidField('after_sequence', 'must be zero or a sequence received earlier');
  return { jobId, afterSequence };
}
