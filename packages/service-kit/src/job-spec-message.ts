import { timestampDate, type Duration, type Timestamp } from '@bufbuild/protobuf/wkt';
import { validateJobSpec, type JsonValue, type ValidJobSpec } from '@docket/contracts';
import { OnParentFailure } from '@docket/proto/docket/common/v1/job_pb.js';
import { LostAttemptPolicy, type RetryPolicy } from '@docket/proto/docket/common/v1/retry_policy_pb.js';

/**
 * The job-describing fields that the public SubmitJobRequest and the
 * internal docket.state.v1.JobSpec share, field for field.
 */
export interface JobSpecMessage {
  readonly queue: string;
  readonly input?: { [key: string]: JsonValue };
  readonly label: string;
  readonly priority: number;
  readonly runAfter?: Timestamp;
  readonly retryPolicy?: RetryPolicy;
  readonly lostAttemptPolicy: LostAttemptPolicy;
  readonly uniqueWhileActive?: { readonly key: string };
  readonly attemptTimeout?: Duration;
  readonly heartbeatTimeout?: Duration;
  readonly concurrencyKey?: string;
  readonly dependsOn?: readonly string[];
  readonly onParentFailure?: OnParentFailure;
}

/**
 * Validates a job description carried by a protobuf message, defaults
 * applied (see `validateJobSpec`): the admission service checks what users
 * send, and the state service checks again what it is asked to store.
 */
export function validateJobSpecMessage(message: JobSpecMessage): ValidJobSpec {
  return validateJobSpec({
    queue: message.queue,
    input: message.input,
    label: message.label,
    priority: message.priority,
    runAfter: message.runAfter ? timestampDate(message.runAfter) : undefined,
    maxAttempts: message.retryPolicy?.maxAttempts ?? 0,
    initialBackoffMs: durationMs(message.retryPolicy?.initialBackoff),
    maxBackoffMs: durationMs(message.retryPolicy?.maxBackoff),
    lostAttemptPolicy: LostAttemptPolicy[message.lostAttemptPolicy] ?? String(message.lostAttemptPolicy),
    uniqueKey: message.uniqueWhileActive?.key,
    attemptTimeoutMs: durationMs(message.attemptTimeout),
    heartbeatTimeoutMs: durationMs(message.heartbeatTimeout),
    concurrencyKey: message.concurrencyKey,
    dependsOn: message.dependsOn,
    onParentFailure: message.onParentFailure === undefined ? undefined : (OnParentFailure[message.onParentFailure] ?? String(message.onParentFailure)),
  });
}

/** Milliseconds of a Duration (fractional when it has sub-millisecond nanos). */
export function durationMs(duration: Duration | undefined): number | undefined {
  if (!duration) return undefined;
  return Number(duration.seconds) * 1000 + duration.nanos / 1e6;
}
