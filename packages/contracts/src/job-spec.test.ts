import { describe, expect, it } from 'vitest';
import { refusalOf } from '../../../test/support/docket-refusal.js';
import { canonicalJson } from './canonical-json.js';
import { RETRY_DEFAULTS, validateJobSpec, type JobSpecInput } from './job-spec.js';
import { LIMITS } from './limits.js';

const valid: JobSpecInput = {
  queue: 'email',
  input: { to: 'ada@example.com' },
  label: 'welcome mail',
  priority: 0,
  runAfter: undefined,
  maxAttempts: 0,
  initialBackoffMs: undefined,
  maxBackoffMs: undefined,
  lostAttemptPolicy: 'UNSPECIFIED',
};

/** What validateJobSpec refuses in `valid` changed by `spec`. */
const refusal = (spec: Partial<JobSpecInput>) => refusalOf(() => validateJobSpec({ ...valid, ...spec }));

describe('validateJobSpec', () => {
  it('applies the service defaults', () => {
    expect(validateJobSpec(valid)).toEqual({
      ...valid,
      canonicalInput: canonicalJson(valid.input ?? {}),
      maxAttempts: RETRY_DEFAULTS.maxAttempts,
      initialBackoffMs: RETRY_DEFAULTS.initialBackoffMs,
      maxBackoffMs: RETRY_DEFAULTS.maxBackoffMs,
      lostAttemptPolicy: 'RETRY',
      dependsOn: [],
      onParentFailure: 'CANCEL',
    });
  });

  it('takes up to 100 distinct parents by job id, and CANCEL or RUN on their failure', () => {
    const parents = Array.from({ length: LIMITS.parentsPerJob }, (_, index) => `job_${String(index).padStart(26, 'a')}`);
    expect(validateJobSpec({ ...valid, dependsOn: parents, onParentFailure: 'RUN' })).toMatchObject({ dependsOn: parents, onParentFailure: 'RUN' });
    expect(refusal({ dependsOn: ['job_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'att_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa'], onParentFailure: 'SOMETIMES' })).toEqual({
      reason: 'INVALID_FIELD',
      fields: ['depends_on[1]', 'depends_on[2]', 'on_parent_failure'],
    });
    expect(refusal({ dependsOn: [...parents, 'job_zzzzzzzzzzzzzzzzzzzzzzzzzz'] })).toEqual({ reason: 'LIMIT_EXCEEDED', fields: ['depends_on'] });
  });

  it('reports every bad field at once', () => {
    expect(
      refusal({ queue: 'Bad Queue', label: 'x'.repeat(LIMITS.labelLength + 1), maxAttempts: 101, lostAttemptPolicy: 'SOMETIMES' }),
    ).toEqual({ reason: 'INVALID_FIELD', fields: ['queue', 'label', 'retry_policy.max_attempts', 'lost_attempt_policy'] });
  });

  it('refuses backoffs out of order, fractional or non-positive', () => {
    expect(refusal({ initialBackoffMs: 10_000, maxBackoffMs: 5_000 }).fields).toEqual(['retry_policy.max_backoff']);
    expect(refusal({ initialBackoffMs: 0.5 }).fields).toEqual(['retry_policy.initial_backoff']);
    expect(refusal({ initialBackoffMs: -1 }).fields).toEqual(['retry_policy.initial_backoff']);
  });

  it('refuses NUL characters, which Postgres jsonb cannot store', () => {
    expect(refusal({ input: { note: 'a\u0000b' } }).fields).toEqual(['input']);
    expect(refusal({ input: { ['a\u0000']: 1 } }).fields).toEqual(['input']);
  });

  it('refuses an input over 256 KiB of canonical JSON as LIMIT_EXCEEDED, and accepts exactly 256 KiB', () => {
    const padding = (bytes: number) => ({ p: 'x'.repeat(bytes - '{"p":""}'.length) });
    expect(validateJobSpec({ ...valid, input: padding(LIMITS.jobInputBytes) }).input).toBeDefined();
    expect(refusal({ input: padding(LIMITS.jobInputBytes + 1) })).toEqual({ reason: 'LIMIT_EXCEEDED', fields: ['input'] });
  });
});
