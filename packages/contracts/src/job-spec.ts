import { canonicalJson, type JsonValue } from './canonical-json.js';
import { DocketError, limitExceeded, type FieldViolation } from './errors.js';
import { containsNul } from './json-nul.js';
import { isIdOf } from './ids.js';
import { LIMITS, isValidQueueName } from './limits.js';
import { utf8ByteLength } from './utf8.js';

/** Service defaults for a job's retry policy (SPEC section 5). */
export const RETRY_DEFAULTS = {
  maxAttempts: 5,
  initialBackoffMs: 1_000,
  maxBackoffMs: 300_000,
} as const;

/** Bounds a retry policy must stay within. */
export const RETRY_BOUNDS = {
  maxAttempts: 100,
  minBackoffMs: 1,
  maxBackoffMs: 7 * 24 * 3_600_000,
} as const;

/** Bounds of a job's attempt limits (SPEC section 13), in milliseconds. */
export const ATTEMPT_LIMIT_BOUNDS = {
  attemptTimeout: { min: 1_000, max: 7 * 24 * 3_600_000 },
  heartbeatTimeout: { min: 1_000, max: 24 * 3_600_000 },
} as const;

/** A `unique_while_active` key or a concurrency key: 1 to 128 printable ASCII characters. */
const JOB_KEY = /^[\x21-\x7e]{1,128}$/;

/** A job description as a request carries it, before validation. */
export interface JobSpecInput {
  readonly queue: string;
  readonly input: { [key: string]: JsonValue } | undefined;
  readonly label: string;
  readonly priority: number;
  readonly runAfter: Date | undefined;
  /** 0 means the default. */
  readonly maxAttempts: number;
  /** Undefined means the default. */
  readonly initialBackoffMs: number | undefined;
  readonly maxBackoffMs: number | undefined;
  readonly lostAttemptPolicy: 'UNSPECIFIED' | 'RETRY' | 'INTERRUPT' | string;
  /** Undefined: no `unique_while_active` was given. */
  readonly uniqueKey?: string | undefined;
  /** Undefined: no limit. */
  readonly attemptTimeoutMs?: number | undefined;
  readonly heartbeatTimeoutMs?: number | undefined;
  /** Empty or undefined: none. */
  readonly concurrencyKey?: string | undefined;
  /** The parents' job ids (undefined or empty: none). */
  readonly dependsOn?: readonly string[] | undefined;
  /** 'UNSPECIFIED' (CANCEL), 'CANCEL' or 'RUN'; undefined: CANCEL. */
  readonly onParentFailure?: string | undefined;
}

/** What a child does when a parent fails (SPEC section 14). */
export type OnParentFailureName = 'CANCEL' | 'RUN';

/** A job description that passed {@link validateJobSpec}, defaults applied. */
export interface ValidJobSpec {
  readonly queue: string;
  readonly input: { [key: string]: JsonValue };
  /**
   * `canonicalJson(input)`, as measured against the input limit. Whoever
   * needs the input's canonical form again (the request digest, the
   * journal's `input_sha256`) takes it from here instead of serialising
   * the input once more.
   */
  readonly canonicalInput: string;
  readonly label: string;
  readonly priority: number;
  readonly runAfter: Date | undefined;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly lostAttemptPolicy: 'RETRY' | 'INTERRUPT';
  /** While a job of the owner with this key is not terminal in the queue, a submission returns it. */
  readonly uniqueKey: string | undefined;
  readonly attemptTimeoutMs: number | undefined;
  readonly heartbeatTimeoutMs: number | undefined;
  /** The job's concurrency key: its queue's `per_key_concurrency` counts and rotates by it. */
  readonly concurrencyKey: string | undefined;
  /** The parents, distinct job ids in the order given, at most `LIMITS.parentsPerJob`. */
  readonly dependsOn: readonly string[];
  readonly onParentFailure: OnParentFailureName;
}

/**
 * Checks a job description against the contract and applies defaults. Every
 * problem is reported at once as INVALID_FIELD with one field violation per
 * field (field paths use the public request's names); an input over 256 KiB
 * of canonical JSON is LIMIT_EXCEEDED. Descriptions never echo the values.
 */
export function validateJobSpec(spec: JobSpecInput): ValidJobSpec {
  const violations: FieldViolation[] = [];
  const violate = (field: string, description: string): void => {
    violations.push({ field, description });
  };
  if (!isValidQueueName(spec.queue)) {
    violate('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  }
  if ([...spec.label].length > LIMITS.labelLength) {
    violate('label', `must be at most ${LIMITS.labelLength} characters`);
  } else if (/[\u0000-\u001f\u007f]/.test(spec.label)) {
    violate('label', 'must not contain control characters');
  }
  const input = spec.input ?? {};
  if (containsNul(input)) violate('input', 'must not contain the NUL character');
  if (spec.runAfter !== undefined && Number.isNaN(spec.runAfter.getTime())) {
    violate('run_after', 'must be a valid timestamp');
  }
  const maxAttempts = spec.maxAttempts === 0 ? RETRY_DEFAULTS.maxAttempts : spec.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > RETRY_BOUNDS.maxAttempts) {
    violate('retry_policy.max_attempts', `must be between 1 and ${RETRY_BOUNDS.maxAttempts} (0 means ${RETRY_DEFAULTS.maxAttempts})`);
  }
  const initialBackoffMs = spec.initialBackoffMs ?? RETRY_DEFAULTS.initialBackoffMs;
  const maxBackoffMs = spec.maxBackoffMs ?? Math.max(RETRY_DEFAULTS.maxBackoffMs, initialBackoffMs);
  const backoffOk = (ms: number): boolean =>
    Number.isInteger(ms) && ms >= RETRY_BOUNDS.minBackoffMs && ms <= RETRY_BOUNDS.maxBackoffMs;
  if (!backoffOk(initialBackoffMs)) {
    violate('retry_policy.initial_backoff', 'must be a whole number of milliseconds between 1ms and 7 days');
  }
  if (!backoffOk(maxBackoffMs)) {
    violate('retry_policy.max_backoff', 'must be a whole number of milliseconds between 1ms and 7 days');
  } else if (backoffOk(initialBackoffMs) && maxBackoffMs < initialBackoffMs) {
    violate('retry_policy.max_backoff', 'must not be less than initial_backoff');
  }
  const policy = spec.lostAttemptPolicy === 'UNSPECIFIED' ? 'RETRY' : spec.lostAttemptPolicy;
  if (policy !== 'RETRY' && policy !== 'INTERRUPT') {
    violate('lost_attempt_policy', 'must be RETRY or INTERRUPT');
  }
  if (spec.uniqueKey !== undefined && !JOB_KEY.test(spec.uniqueKey)) {
    violate('unique_while_active.key', 'must be 1 to 128 printable ASCII characters');
  }
  if (spec.concurrencyKey !== undefined && spec.concurrencyKey !== '' && !JOB_KEY.test(spec.concurrencyKey)) {
    violate('concurrency_key', 'must be 1 to 128 printable ASCII characters, or empty');
  }
  const limitOk = (ms: number | undefined, bounds: { readonly min: number; readonly max: number }): boolean =>
    ms === undefined || (Number.isInteger(ms) && ms >= bounds.min && ms <= bounds.max);
  if (!limitOk(spec.attemptTimeoutMs, ATTEMPT_LIMIT_BOUNDS.attemptTimeout)) {
    violate('attempt_timeout', 'must be a whole number of milliseconds between 1s and 7 days');
  }
  if (!limitOk(spec.heartbeatTimeoutMs, ATTEMPT_LIMIT_BOUNDS.heartbeatTimeout)) {
    violate('heartbeat_timeout', 'must be a whole number of milliseconds between 1s and 24 hours');
  }
  const dependsOn = spec.dependsOn ?? [];
  dependsOn.forEach((id, index) => {
    if (!isIdOf('job', id)) violate(`depends_on[${index}]`, 'must be a Docket job id');
    else if (dependsOn.indexOf(id) !== index) violate(`depends_on[${index}]`, 'must not repeat a parent');
  });
  const onParentFailure = spec.onParentFailure === undefined || spec.onParentFailure === 'UNSPECIFIED' ? 'CANCEL' : spec.onParentFailure;
  if (onParentFailure !== 'CANCEL' && onParentFailure !== 'RUN') violate('on_parent_failure', 'must be CANCEL or RUN');
  if (violations.length > 0) {
    throw new DocketError('INVALID_FIELD', 'the job description is invalid', { fieldViolations: violations });
  }
  if (dependsOn.length > LIMITS.parentsPerJob) throw limitExceeded('parentsPerJob', 'depends_on');
  const canonicalInput = canonicalJson(input);
  if (utf8ByteLength(canonicalInput) > LIMITS.jobInputBytes) throw limitExceeded('jobInputBytes', 'input');
  return {
    queue: spec.queue,
    input,
    canonicalInput,
    label: spec.label,
    priority: spec.priority,
    runAfter: spec.runAfter,
    maxAttempts,
    initialBackoffMs,
    maxBackoffMs,
    lostAttemptPolicy: policy as 'RETRY' | 'INTERRUPT',
    uniqueKey: spec.uniqueKey,
    attemptTimeoutMs: spec.attemptTimeoutMs,
    heartbeatTimeoutMs: spec.heartbeatTimeoutMs,
    concurrencyKey: spec.concurrencyKey === '' ? undefined : spec.concurrencyKey,
    dependsOn,
    onParentFailure: onParentFailure as OnParentFailureName,
  };
}
