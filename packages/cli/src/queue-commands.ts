import { isValidQueueName } from '@docket/contracts';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { durationMs, timestampDate, type Duration } from '@bufbuild/protobuf/wkt';
import {
  GetQueueResponseSchema,
  GetQueueStatsResponseSchema,
  type GetQueueStatsResponse,
  SetQueuePolicyResponseSchema,
  type GetQueueResponse,
  type QueuePolicy,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { UsageError, type CliContext, type Command } from './command.js';
import { protoJsonLine } from './job-client.js';
import { admissionCommand, admissionOptionsHelp, parseAdmissionArguments, reportingFailures, type AdmissionClient, type AdmissionOptions } from './owner-call.js';
import { formatRetentionAge, parseRetentionAge } from './retention-age.js';

/** The fields of a SetQueuePolicy the CLI sends; those left out stay as they are. */
export interface QueuePolicyChange {
  maxConcurrency?: number;
  perKeyConcurrency?: number;
  paused?: boolean;
  rateLimit?: { jobs: number; per?: { seconds: bigint } };
}

/** What `docket queue` was asked: read a queue, or change the fields of its policy given. */
export type QueueArguments =
  | { readonly action: 'get'; readonly queue: string; readonly json: boolean; readonly call: AdmissionOptions }
  | {
      readonly action: 'stats';
      readonly queue: string;
      readonly window: { seconds: bigint } | undefined;
      readonly bucket: { seconds: bigint } | undefined;
      readonly json: boolean;
      readonly call: AdmissionOptions;
    }
  | { readonly action: 'set'; readonly queue: string; readonly change: QueuePolicyChange; readonly json: boolean; readonly call: AdmissionOptions };

const RATE = /^([0-9]+)\/([0-9]+[dhms])$/;

/**
 * Reads `docket queue get <queue>`, `docket queue set <queue>
 * [--max-concurrency N] [--rate JOBS/AGE|none]`, `docket queue pause|resume
 * <queue>`; UsageError for anything wrong. The bounds are the service's.
 */
export function parseQueueArguments(args: readonly string[]): QueueArguments {
  const [verb, ...rest] = args;
  const { positionals, values, call } = parseAdmissionArguments(rest, {
    'max-concurrency': { type: 'string' },
    'per-key-concurrency': { type: 'string' },
    rate: { type: 'string' },
    window: { type: 'string' },
    bucket: { type: 'string' },
    json: { type: 'boolean' },
  });
  const [queue, ...extra] = positionals;
  if (!verb || !['get', 'stats', 'set', 'pause', 'resume'].includes(verb)) throw new UsageError('say get, stats, set, pause or resume (docket help queue)');
  if (queue === undefined || !isValidQueueName(queue)) throw new UsageError('a queue matching ^[a-z0-9][a-z0-9._-]{0,127}$ is required');
  if (extra.length > 0) throw new UsageError(`one queue at a time (also got ${extra.join(' ')})`);
  const json = values['json'] === true;
  const limits = ['max-concurrency', 'per-key-concurrency', 'rate'].some((flag) => values[flag] !== undefined);
  const windowed = values['window'] !== undefined || values['bucket'] !== undefined;
  if (verb === 'stats') {
    if (limits) throw new UsageError('stats takes no limits');
    const age = (flag: string) => (typeof values[flag] === 'string' ? { seconds: parseRetentionAge(values[flag], `--${flag}`) } : undefined);
    return { action: 'stats', queue, window: age('window'), bucket: age('bucket'), json, call };
  }
  if (windowed) throw new UsageError('--window and --bucket are for stats');
  if (verb === 'get') {
    if (limits) throw new UsageError('get takes no limits');
    return { action: 'get', queue, json, call };
  }
  if (verb !== 'set' && limits) throw new UsageError(`${verb} takes no limits (use docket queue set)`);
  const change: QueuePolicyChange = verb === 'pause' ? { paused: true } : verb === 'resume' ? { paused: false } : {};
  const maxConcurrency = limitFlag(values, 'max-concurrency');
  if (maxConcurrency !== undefined) change.maxConcurrency = maxConcurrency;
  const perKeyConcurrency = limitFlag(values, 'per-key-concurrency');
  if (perKeyConcurrency !== undefined) change.perKeyConcurrency = perKeyConcurrency;
  const rate = values['rate'];
  if (typeof rate === 'string') {
    if (rate === 'none') change.rateLimit = { jobs: 0 };
    else {
      const match = RATE.exec(rate);
      if (!match || Number(match[1]) < 1) throw new UsageError('--rate must be JOBS/AGE, like 10/1s or 500/1h, or none');
      change.rateLimit = { jobs: Number(match[1]), per: { seconds: parseRetentionAge(match[2] ?? '', '--rate') } };
    }
  }
  if (verb === 'set' && !limits) throw new UsageError('set needs --max-concurrency, --per-key-concurrency or --rate (pause and resume are their own actions)');
  return { action: 'set', queue, change, json, call };
}

/** A limit flag: a whole number from 1, or `none` (sent as 0, which removes the limit); undefined when not given. */
function limitFlag(values: Record<string, unknown>, flag: string): number | undefined {
  const text = values[flag];
  if (typeof text !== 'string') return undefined;
  if (text === 'none') return 0;
  if (/^[0-9]+$/.test(text) && Number(text) >= 1) return Number(text);
  throw new UsageError(`--${flag} must be a whole number from 1, or none`);
}

/** Runs a parsed `docket queue` action and prints the queue; resolves to the exit code. */
export async function runQueueAction(client: AdmissionClient, parsed: QueueArguments, context: CliContext): Promise<number> {
  return reportingFailures(
    'queue',
    parsed.call,
    context,
    async () => {
      if (parsed.action === 'get') {
        const answer = await client.getQueue({ queue: parsed.queue });
        context.out(parsed.json ? protoJsonLine(GetQueueResponseSchema, answer) : `${formatQueue(answer)}\n`);
        return 0;
      }
      if (parsed.action === 'stats') {
        const answer = await client.getQueueStats({ queue: parsed.queue, window: parsed.window, bucket: parsed.bucket });
        context.out(parsed.json ? protoJsonLine(GetQueueStatsResponseSchema, answer) : formatQueueStats(parsed.queue, answer));
        return 0;
      }
      const answer = await client.setQueuePolicy({ queue: parsed.queue, ...parsed.change });
      context.out(parsed.json ? protoJsonLine(SetQueuePolicyResponseSchema, answer) : `${answer.policy ? formatPolicy(answer.policy) : `${parsed.queue}: no policy in the answer`}\n`);
      return 0;
    },
    'admin',
  );
}

/** One line for a policy: `reports: max concurrency 5, rate 10/1s, running` (and `, 2 per key` when keys are limited). */
export function formatPolicy(policy: QueuePolicy): string {
  const concurrency = policy.maxConcurrency > 0 ? `max concurrency ${policy.maxConcurrency}` : 'no concurrency limit';
  const perKey = policy.perKeyConcurrency > 0 ? `, ${policy.perKeyConcurrency} per key` : '';
  const rate = policy.rateLimit?.per ? `rate ${policy.rateLimit.jobs}/${formatRetentionAge(policy.rateLimit.per)}` : 'no rate limit';
  return `${policy.queue}: ${concurrency}${perKey}, ${rate}, ${policy.paused ? 'PAUSED' : 'running'}`;
}

/** The policy line, then the statistics: jobs by status, running attempts, the oldest queued job's wait. */
export function formatQueue(answer: GetQueueResponse): string {
  const counts = answer.counts.map((count) => `${JobStatus[count.status]} ${count.jobs}`).join(', ') || 'no jobs';
  const oldest = answer.oldestQueuedAge ? `oldest queued ${formatWait(answer.oldestQueuedAge.seconds)}` : 'none queued';
  return `${answer.policy ? formatPolicy(answer.policy) : '?'}\n  ${counts}; ${answer.runningAttempts} running attempts; ${oldest}`;
}

/**
 * The statistics: a line of counts and the oldest wait, then one line per
 * bucket with activity: `  <start>  admitted N  claimed N  succeeded N  failed N  pickup p50 X ms p99 Y ms`.
 */
export function formatQueueStats(queue: string, answer: GetQueueStatsResponse): string {
  const counts = answer.counts.map((count) => `${JobStatus[count.status]} ${count.jobs}`).join(', ') || 'no jobs';
  const oldest = answer.oldestQueuedAge ? `oldest queued ${formatWait(answer.oldestQueuedAge.seconds)}` : 'none queued';
  const ms = (value: Duration | undefined) => (value === undefined ? '-' : `${Math.round(durationMs(value))} ms`);
  const active = answer.buckets.filter((bucket) => bucket.admitted + bucket.claimed + bucket.succeeded + bucket.failed > 0n);
  const lines = active.map(
    (bucket) =>
      `  ${bucket.startTime ? timestampDate(bucket.startTime).toISOString() : '?'}  admitted ${bucket.admitted}  claimed ${bucket.claimed}` +
      `  succeeded ${bucket.succeeded}  failed ${bucket.failed}  pickup p50 ${ms(bucket.pickupLatencyP50)} p99 ${ms(bucket.pickupLatencyP99)}`,
  );
  return `${queue}: ${counts}; ${oldest}\n${lines.length === 0 ? `  no activity in the ${answer.buckets.length} buckets\n` : `${lines.join('\n')}\n`}`;
}

function formatWait(seconds: bigint): string {
  return seconds < 120n ? `${seconds}s` : seconds < 7_200n ? `${seconds / 60n}m` : `${seconds / 3_600n}h`;
}

/** `docket queue get|set|pause|resume <queue>`: SetQueuePolicy and GetQueue (admin). */
export const queueCommand: Command = admissionCommand({
  name: 'queue',
  summary: "read a queue, or set its flow control: concurrency, rate, pause (admin)",
  help: `Usage: docket queue get <queue> [--json] [--url <url>] [--token <jwt>]
       docket queue stats <queue> [--window <age>] [--bucket <age>] [--json]
                     [--url <url>] [--token <jwt>]
       docket queue set <queue> [--max-concurrency <n>|none]
                     [--per-key-concurrency <n>|none] [--rate <jobs>/<age>|none]
                     [--json] [--url <url>] [--token <jwt>]
       docket queue pause|resume <queue> [--json] [--url <url>] [--token <jwt>]

Queue administration (AdmissionService GetQueue and SetQueuePolicy;
docs/queues.md):
  get      the queue's policy and statistics: jobs by status, running
           attempts and how long the oldest queued job has waited
  stats    GetQueueStats: jobs by status, the oldest queued job's wait,
           and per bucket (--bucket, default 1m, whole minutes) over
           --window (default 1h, at most 7d) the jobs admitted, claimed,
           succeeded and failed with pickup latency p50 and p99; one line
           per bucket that saw any (docs/operators.md)
  set      changes only what it is given:
             --max-concurrency <n>   running attempts allowed across every
                                     worker (none: no limit)
             --per-key-concurrency <n>
                                     running attempts allowed per concurrency
                                     key (docket submit --concurrency-key),
                                     claims rotating across keys (none: keys
                                     are not limited)
             --rate <jobs>/<age>     at most <jobs> claims per <age>, e.g.
                                     10/1s or 500/1h (none: no limit); a
                                     token bucket of <jobs>, refilled
                                     steadily, by the database clock
  pause    stop handing out the queue's jobs (submissions still admit them)
  resume   hand them out again
Each change is idempotent by its content. Admins only: another token is
refused (permission_denied). Retention is docket retention's.

Prints the policy as one line, for example:
  reports: max concurrency 5, rate 10/1s, running
and for get a second line with the statistics.

Options:
${admissionOptionsHelp('admin')}

Exit status: 0 done, 1 refused or failed (the gRPC code and reason are
printed), 2 bad arguments.
`,
  parse: parseQueueArguments,
  call: runQueueAction,
});
