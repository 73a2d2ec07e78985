import { describe, expect, it } from 'vitest';
import { JobFailure, permanentFailure, retryableFailure } from './job-failure.js';
import { GENERIC_FAILURE_MESSAGE, planOutcome, planUnstarted } from './outcome-plan.js';

const returned = (value: unknown) => ({ status: 'returned' as const, value });
const threw = (error: unknown) => ({ status: 'threw' as const, error });

describe('planOutcome', () => {
  it('reports a returned object as the success result, and nothing as {}', () => {
    expect(planOutcome(returned({ n: 3, at: new Date(0) }), undefined)).toEqual({
      kind: 'success',
      result: { n: 3, at: '1970-01-01T00:00:00.000Z' },
    });
    expect(planOutcome(returned(undefined), undefined)).toEqual({ kind: 'success', result: {} });
  });

  it('turns a result that is not a JSON object into an INTERNAL failure', () => {
    for (const value of [42, 'text', [1, 2], { big: 1n }]) {
      expect(planOutcome(returned(value), undefined)).toMatchObject({ kind: 'failure', failureClass: 'INTERNAL' });
    }
  });

  it('reports a JobFailure with its class, message and details', () => {
    expect(planOutcome(threw(permanentFailure('INVALID_INPUT', 'count must be positive', { field: 'count' })), undefined)).toEqual({
      kind: 'failure',
      failureClass: 'INVALID_INPUT',
      message: 'count must be positive',
      safeDetails: { field: 'count' },
      unexpected: false,
    });
    expect(planOutcome(threw(retryableFailure('CAPACITY', 'busy')), undefined)).toMatchObject({ failureClass: 'CAPACITY' });
  });

  it('never reports the text of any other error', () => {
    const plan = planOutcome(threw(new Error('password=hunter2 at /etc/secret')), undefined);
    expect(plan).toEqual({ kind: 'failure', failureClass: 'INTERNAL', message: GENERIC_FAILURE_MESSAGE, safeDetails: undefined, unexpected: true });
    expect(JSON.stringify(plan)).not.toContain('hunter2');
  });

  it('lets describeError opt an error in, and ignores a describer that throws', () => {
    const describe = (error: unknown) => (error instanceof RangeError ? new JobFailure('INVALID_INPUT', error.message) : undefined);
    expect(planOutcome(threw(new RangeError('n too big')), undefined, describe)).toMatchObject({ failureClass: 'INVALID_INPUT', message: 'n too big' });
    expect(planOutcome(threw(new Error('x')), undefined, () => { throw new Error('oops'); })).toMatchObject({ message: GENERIC_FAILURE_MESSAGE });
  });

  it('reports cancelled after a cancel, however the handler ended', () => {
    for (const settlement of [returned({ done: true }), threw(new Error('aborted')), threw(permanentFailure('NOT_FOUND', 'gone'))]) {
      expect(planOutcome(settlement, 'cancel')).toEqual({ kind: 'cancelled' });
    }
  });

  it('reports paused after a pause, unless the handler threw a JobFailure', () => {
    expect(planOutcome(returned(undefined), 'pause')).toEqual({ kind: 'paused' });
    expect(planOutcome(threw(new Error('aborted')), 'pause')).toEqual({ kind: 'paused' });
    expect(planOutcome(threw(permanentFailure('INVALID_INPUT', 'bad')), 'pause')).toMatchObject({ kind: 'failure', failureClass: 'INVALID_INPUT' });
  });

  it('reports nothing once the attempt is lost', () => {
    for (const settlement of [returned({ done: true }), threw(new Error('x')), threw(permanentFailure('INVALID_INPUT', 'bad'))]) {
      expect(planOutcome(settlement, 'lost')).toEqual({ kind: 'none', why: 'lost' });
    }
  });

  it('reports nothing once an approval request ended the attempt, whatever the handler did next', () => {
    for (const settlement of [returned({ done: true }), returned('not an object'), threw(new Error('x')), threw(permanentFailure('INVALID_INPUT', 'bad'))]) {
      expect(planOutcome(settlement, 'approval')).toEqual({ kind: 'none', why: 'approval' });
    }
  });

  it('at shutdown reports finished work and typed failures, and leaves the rest to lease expiry', () => {
    expect(planOutcome(returned({ ok: 1 }), 'shutdown')).toEqual({ kind: 'success', result: { ok: 1 } });
    expect(planOutcome(threw(retryableFailure('TIMEOUT', 'slow')), 'shutdown')).toMatchObject({ kind: 'failure', failureClass: 'TIMEOUT' });
    expect(planOutcome(threw(new Error('aborted')), 'shutdown')).toEqual({ kind: 'none', why: 'shutdown' });
  });
});

describe('JobFailure', () => {
  it('knows which classes the service retries, and refuses service-assigned classes', () => {
    expect(permanentFailure('PERMISSION', 'no').retryable).toBe(false);
    expect(retryableFailure('TRANSIENT', 'flaky').retryable).toBe(true);
    expect(() => new JobFailure('LOST_ATTEMPT' as never, 'x')).toThrow(TypeError);
  });

  it('cuts messages to the service limit', () => {
    expect(permanentFailure('INVALID_INPUT', 'x'.repeat(5000)).message).toHaveLength(4096);
  });
});

describe('planUnstarted', () => {
  it('reports cancel and pause of a job that never started, and nothing for lost or shutdown', () => {
    expect(planUnstarted('cancel')).toEqual({ kind: 'cancelled' });
    expect(planUnstarted('pause')).toEqual({ kind: 'paused' });
    expect(planUnstarted('lost')).toEqual({ kind: 'none', why: 'lost' });
    expect(planUnstarted('shutdown')).toEqual({ kind: 'none', why: 'shutdown' });
  });
});
