import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { DocketClientError } from '@docket/client';
import { describeRefusal } from './refusal-text.js';

describe('describeRefusal', () => {
  it("says what the SPEC's reason means, with the service's own explanation", () => {
    const refused = new DocketClientError(Code.FailedPrecondition, 'ILLEGAL_TRANSITION', 'PauseJob failed: ILLEGAL_TRANSITION: a SUCCEEDED job cannot become PAUSED');
    expect(describeRefusal(refused)).toEqual({
      reason: 'ILLEGAL_TRANSITION',
      words: 'the job cannot make this change from the status it is in now (a SUCCEEDED job cannot become PAUSED)',
      metadata: {},
    });
  });

  it('names the code when the service sent no reason, and keeps metadata and field violations', () => {
    expect(describeRefusal(new DocketClientError(Code.Unavailable, undefined, 'GetJob failed: Unavailable')).reason).toBe('UNAVAILABLE');
    const corrupt = new DocketClientError(Code.DataLoss, 'JOURNAL_CORRUPT', 'StreamJobEvents failed: JOURNAL_CORRUPT: journal does not verify', { metadata: { sequence: '2' } });
    expect(describeRefusal(corrupt)).toMatchObject({ reason: 'JOURNAL_CORRUPT', metadata: { sequence: '2' } });
    const invalid = new DocketClientError(Code.InvalidArgument, 'INVALID_FIELD', 'SubmitJob failed: INVALID_FIELD', { fieldViolations: [{ field: 'queue', description: 'must match the queue name pattern' }] });
    expect(describeRefusal(invalid).words).toBe('a field is not valid (queue: must match the queue name pattern)');
  });

  it('shows nothing of an error that is not a client error', () => {
    const leaky = new Error('connect ECONNREFUSED postgres://user:secret@db/docket');
    expect(describeRefusal(leaky)).toEqual({ reason: 'UNKNOWN', words: 'something went wrong in the console', metadata: {} });
  });
});
