import { create } from '@bufbuild/protobuf';
import { Code, createClient, createRouterTransport, type ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import {
  AdmissionService,
  SignalReconcileAction,
  type DecideApprovalRequest,
  type HardDeleteJobRequest,
  type ReconcileSignalsRequest,
  type RestoreJobRequest,
  type RetryJobRequest,
  type SendSignalRequest,
  type SetLegalHoldRequest,
  SetRetentionPolicyRequestSchema,
  type SetRetentionPolicyRequest,
  type SoftDeleteJobRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { DeletionSchema, DeletionState } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobLifecycle, JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { SignalState } from '@docket/proto/docket/common/v1/signal_pb.js';
import { decideApproval, parseDecisionArguments } from './approval-commands.js';
import { UsageError } from './command.js';
import { deleteJob, parseDeleteArguments, parseRestoreArguments, restoreJob } from './delete-commands.js';
import { formatDeletion, parseDeletionArguments, showDeletion } from './deletion-command.js';
import { parseLegalHoldArguments, setLegalHold } from './legal-hold-commands.js';
import { DEFAULT_ADMISSION_URL, generateIdempotencyKey } from './owner-call.js';
import { parseRetentionArguments, setRetentionPolicy } from './retention-command.js';
import { parseRetryArguments, retryJob } from './retry-command.js';
import { runCli } from './run-cli.js';
import { parseReconcileArguments, parseSignalArguments, reconcileSignals, sendSignal } from './signal-commands.js';
import { capture } from './testing/captured-context.js';
import { refusal } from './testing/service-refusal.js';

const JOB = 'job_01jdv2x0000000000000000000';
const APPROVAL = 'apr_01jdv2x0000000000000000000';
const DELETION = 'del_01jdv2x0000000000000000000';
const USER_KEY = 'my-own-key-0123456789';
const KEY_GRAMMAR = /^[A-Za-z0-9._~-]{16,128}$/;

/**
 * An in-memory AdmissionService recording what it was asked; `fail` makes
 * the effecting call throw. GetDeletion answers `deletions` in turn (the
 * last one again once they run out); SetRetentionPolicy answers `storedPolicy`
 * if given, else the policy it was sent.
 */
function fakeAdmission(
  options: {
    job?: MessageInitShape<typeof JobSchema>;
    fail?: ConnectError;
    replayed?: boolean;
    deletions?: MessageInitShape<typeof DeletionSchema>[];
    storedPolicy?: SetRetentionPolicyRequest['policy'];
  } = {},
) {
  const decisions: DecideApprovalRequest[] = [];
  const signals: SendSignalRequest[] = [];
  const reconciles: ReconcileSignalsRequest[] = [];
  const softDeletes: SoftDeleteJobRequest[] = [];
  const hardDeletes: HardDeleteJobRequest[] = [];
  const restores: RestoreJobRequest[] = [];
  const retries: RetryJobRequest[] = [];
  const holds: SetLegalHoldRequest[] = [];
  const policies: SetRetentionPolicyRequest[] = [];
  const deletionGets: string[] = [];
  const gets: string[] = [];
  const replayed = options.replayed ?? false;
  const transport = createRouterTransport((router) => {
    router.service(AdmissionService, {
      getJob(request) {
        gets.push(request.jobId);
        return { job: create(JobSchema, { id: request.jobId, status: JobStatus.PAUSED, ...options.job }) };
      },
      decideApproval(request) {
        decisions.push(request);
        if (options.fail) throw options.fail;
        const status = request.decision === ApprovalDecision.ALLOW ? JobStatus.QUEUED : JobStatus.FAILED;
        return { job: create(JobSchema, { id: request.jobId, status }), replayed: options.replayed ?? false };
      },
      sendSignal(request) {
        signals.push(request);
        if (options.fail) throw options.fail;
        return { signal: { jobId: request.jobId, sequence: 3n, name: request.name, state: SignalState.PENDING }, replayed: false };
      },
      reconcileSignals(request) {
        reconciles.push(request);
        if (options.fail) throw options.fail;
        return { job: create(JobSchema, { id: request.jobId, status: JobStatus.RUNNING, unresolvedSignals: 0 }), replayed: false };
      },
      softDeleteJob(request) {
        softDeletes.push(request);
        if (options.fail) throw options.fail;
        return { job: create(JobSchema, { id: request.jobId, status: JobStatus.SUCCEEDED, lifecycle: JobLifecycle.SOFT_DELETED }), replayed };
      },
      restoreJob(request) {
        restores.push(request);
        if (options.fail) throw options.fail;
        return { job: create(JobSchema, { id: request.jobId, status: JobStatus.SUCCEEDED, lifecycle: JobLifecycle.ACTIVE }), replayed };
      },
      hardDeleteJob(request) {
        hardDeletes.push(request);
        if (options.fail) throw options.fail;
        return { deletion: { deletionId: DELETION, jobId: request.jobId, state: DeletionState.QUEUED }, replayed };
      },
      getDeletion(request) {
        deletionGets.push(request.deletionId);
        if (options.fail) throw options.fail;
        const answers = options.deletions ?? [{ state: DeletionState.QUEUED }];
        const answer = answers[Math.min(deletionGets.length, answers.length) - 1];
        return { deletion: { deletionId: request.deletionId, jobId: JOB, ...answer } };
      },
      retryJob(request) {
        retries.push(request);
        if (options.fail) throw options.fail;
        return { job: create(JobSchema, { id: request.jobId, status: JobStatus.QUEUED }), replayed };
      },
      setLegalHold(request) {
        holds.push(request);
        if (options.fail) throw options.fail;
        return { job: create(JobSchema, { id: request.jobId, status: JobStatus.FAILED, legalHold: request.held, ...options.job }) };
      },
      setRetentionPolicy(request) {
        policies.push(request);
        if (options.fail) throw options.fail;
        return { policy: options.storedPolicy ?? request.policy };
      },
    });
  });
  return {
    client: createClient(AdmissionService, transport),
    decisions,
    signals,
    reconciles,
    softDeletes,
    hardDeletes,
    restores,
    retries,
    holds,
    policies,
    deletionGets,
    gets,
  };
}

describe('owner command arguments', () => {
  it('reads approve and deny with and without an approval id', () => {
    expect(parseDecisionArguments('allow', [JOB, APPROVAL, '--comment', 'looks right'])).toEqual({
      decision: 'allow',
      jobId: JOB,
      approvalId: APPROVAL,
      comment: 'looks right',
      owner: { url: DEFAULT_ADMISSION_URL, token: undefined, key: undefined },
    });
    expect(parseDecisionArguments('deny', [JOB, '--key', USER_KEY, '--url', 'https://docket.example', '--token', 't'])).toEqual({
      decision: 'deny',
      jobId: JOB,
      approvalId: undefined,
      comment: '',
      owner: { url: 'https://docket.example', token: 't', key: USER_KEY },
    });
  });

  it('reads signal with a JSON object payload (default {}) and reconcile with exactly one action', () => {
    expect(parseSignalArguments([JOB, 'add', '--payload', '{"n":3}'])).toMatchObject({ jobId: JOB, name: 'add', payload: { n: 3 } });
    expect(parseSignalArguments([JOB, 'stop']).payload).toEqual({});
    expect(parseReconcileArguments(['reconcile', JOB, '--redeliver'])).toMatchObject({ jobId: JOB, action: 'redeliver' });
    expect(parseReconcileArguments(['reconcile', JOB, '--discard', '--key', USER_KEY])).toMatchObject({ action: 'discard', owner: { key: USER_KEY } });
  });

  it.each([
    [() => parseDecisionArguments('allow', []), /a job id is required/],
    [() => parseDecisionArguments('allow', [JOB, APPROVAL, 'more']), /one job and one approval at a time/],
    [() => parseDecisionArguments('allow', [JOB, '--url', 'localhost:7401']), /--url must be an http/],
    [() => parseDecisionArguments('allow', [JOB, '--token=']), /--token must not be empty/],
    [() => parseDecisionArguments('allow', [JOB, '--key', 'short']), /--key must be 16 to 128 characters/],
    [() => parseDecisionArguments('allow', [JOB, '--key', 'has spaces in it, sixteen+']), /--key must be/],
    [() => parseSignalArguments([JOB]), /a signal name is required/],
    [() => parseSignalArguments([JOB, 'add', '--payload', '{n:3}']), /--payload must be JSON/],
    [() => parseSignalArguments([JOB, 'add', '--payload', '[1,2]']), /--payload must be a JSON object/],
    [() => parseReconcileArguments([JOB, '--redeliver']), /unknown subcommand/],
    [() => parseReconcileArguments([]), /a subcommand is required: reconcile/],
    [() => parseReconcileArguments(['reconcile', JOB]), /either --redeliver or --discard/],
    [() => parseReconcileArguments(['reconcile', JOB, '--redeliver', '--discard']), /either --redeliver or --discard/],
  ])('refuses bad arguments as usage errors (%#)', (parse, message) => {
    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(message);
  });

  it('never echoes a refused --key', () => {
    const secretish = 'order 4242 4242';
    expect(() => parseDecisionArguments('allow', [JOB, '--key', secretish])).toThrow(expect.objectContaining({ message: expect.not.stringContaining('4242') }));
  });

  it('generates keys of the key grammar, each new', () => {
    const keys = new Set(Array.from({ length: 100 }, generateIdempotencyKey));
    expect(keys.size).toBe(100);
    for (const key of keys) expect(key).toMatch(KEY_GRAMMAR);
  });

  it('lists the commands and exits 2 with a pointer to help on a usage error', async () => {
    const context = capture();
    expect(await runCli(['help'], context)).toBe(0);
    expect(context.output().out).toMatch(/\n {2}approve +allow a job's pending approval/);
    expect(context.output().out).toMatch(/\n {2}deny +deny a job's pending approval/);
    expect(context.output().out).toMatch(/\n {2}signal +send a named signal/);
    expect(context.output().out).toMatch(/\n {2}signals +resolve a job's UNKNOWN signals/);
    for (const [argv, topic] of [[['approve'], 'approve'], [['deny', JOB, '--bogus'], 'deny'], [['signal', JOB], 'signal'], [['signals', 'reconcile', JOB], 'signals']] as const) {
      const run = capture();
      expect(await runCli([...argv], run)).toBe(2);
      expect(run.output().err).toContain(`See: docket help ${topic}`);
    }
    const help = capture();
    expect(await runCli(['signals', '--help'], help)).toBe(0);
    expect(help.output().out).toMatch(/^Usage: docket signals reconcile <job_id> \(--redeliver \| --discard\)/);
  });
});

describe('docket approve and deny', () => {
  it('decides the named approval with a generated key, printed once to standard error', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await decideApproval(fake.client, parseDecisionArguments('allow', [JOB, APPROVAL, '--comment', 'ok']), context)).toBe(0);
    expect(fake.gets).toEqual([]);
    expect(fake.decisions).toHaveLength(1);
    const request = fake.decisions[0]!;
    expect(request).toMatchObject({ jobId: JOB, approvalId: APPROVAL, decision: ApprovalDecision.ALLOW, comment: 'ok' });
    expect(request.idempotencyKey).toMatch(KEY_GRAMMAR);
    const { out, err } = context.output();
    expect(out).toBe(`allowed ${APPROVAL} of ${JOB}: the job is QUEUED\n`);
    expect(err).toBe(`docket approve: idempotency key ${request.idempotencyKey} (to retry this request, repeat it with --key ${request.idempotencyKey})\n`);
  });

  it('uses --key as given and never prints it, also when the call is a replay', async () => {
    const fake = fakeAdmission({ replayed: true });
    const context = capture();
    expect(await decideApproval(fake.client, parseDecisionArguments('deny', [JOB, APPROVAL, '--key', USER_KEY]), context)).toBe(0);
    expect(fake.decisions[0]).toMatchObject({ idempotencyKey: USER_KEY, decision: ApprovalDecision.DENY });
    const { out, err } = context.output();
    expect(out).toBe(`denied ${APPROVAL} of ${JOB}: the job is FAILED (replayed: this key was used before)\n`);
    expect(out + err).not.toContain(USER_KEY);
  });

  it('without an approval id decides the job\'s pending approval, and says so when there is none', async () => {
    const pending = fakeAdmission({ job: { pendingApproval: { approvalId: APPROVAL, prompt: 'Ship it?' } } });
    const context = capture();
    expect(await decideApproval(pending.client, parseDecisionArguments('allow', [JOB, '--key', USER_KEY]), context)).toBe(0);
    expect(pending.gets).toEqual([JOB]);
    expect(pending.decisions[0]).toMatchObject({ approvalId: APPROVAL });

    const none = fakeAdmission({ job: { status: JobStatus.RUNNING } });
    const nothing = capture();
    expect(await decideApproval(none.client, parseDecisionArguments('allow', [JOB]), nothing)).toBe(1);
    expect(none.decisions).toEqual([]);
    expect(nothing.output().err).toBe(`docket approve: job ${JOB} has no pending approval (it is RUNNING)\n`);
  });

  it('prints a refusal as its gRPC code and reason and exits 1', async () => {
    const fake = fakeAdmission({ fail: refusal(Code.AlreadyExists, 'APPROVAL_SPENT', 'the approval was already decided') });
    const context = capture();
    expect(await decideApproval(fake.client, parseDecisionArguments('allow', [JOB, APPROVAL, '--key', USER_KEY]), context)).toBe(1);
    expect(context.output()).toEqual({ out: '', err: 'docket approve: already_exists APPROVAL_SPENT: the approval was already decided\n' });
  });

  it('names the address when nothing listens there', async () => {
    const context = capture();
    const url = 'http://127.0.0.1:9';
    expect(await runCli(['approve', JOB, APPROVAL, '--url', url, '--token', 'a.b.c', '--key', USER_KEY], context)).toBe(1);
    expect(context.output().err).toMatch(/^docket approve: unavailable: .*\(is the admission service listening at http:\/\/127\.0\.0\.1:9\?\)\n$/);
  });
});

describe('docket signal and docket signals reconcile', () => {
  it('sends the signal with its payload and prints its sequence and state', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await sendSignal(fake.client, parseSignalArguments([JOB, 'add', '--payload', '{"n":3}', '--key', USER_KEY]), context)).toBe(0);
    expect(fake.signals[0]).toMatchObject({ idempotencyKey: USER_KEY, jobId: JOB, name: 'add', payload: { n: 3 } });
    expect(context.output()).toEqual({ out: `signal 3 "add" to ${JOB}: PENDING\n`, err: '' });
  });

  it('prints SIGNALS_UNRESOLVED as its code and reason', async () => {
    const fake = fakeAdmission({ fail: refusal(Code.FailedPrecondition, 'SIGNALS_UNRESOLVED', 'the job has 1 UNKNOWN signal') });
    const context = capture();
    expect(await sendSignal(fake.client, parseSignalArguments([JOB, 'add', '--key', USER_KEY]), context)).toBe(1);
    expect(context.output().err).toBe('docket signal: failed_precondition SIGNALS_UNRESOLVED: the job has 1 UNKNOWN signal\n');
  });

  it('reconciles with the chosen action and prints what is left', async () => {
    for (const [flag, action, verb] of [['--redeliver', SignalReconcileAction.REDELIVER, 'redelivering'], ['--discard', SignalReconcileAction.DISCARD, 'discarded']] as const) {
      const fake = fakeAdmission();
      const context = capture();
      expect(await reconcileSignals(fake.client, parseReconcileArguments(['reconcile', JOB, flag]), context)).toBe(0);
      expect(fake.reconciles[0]).toMatchObject({ jobId: JOB, action });
      expect(fake.reconciles[0]!.idempotencyKey).toMatch(KEY_GRAMMAR);
      expect(context.output().out).toBe(`${verb} the UNKNOWN signals of ${JOB}: 0 unresolved signal(s) left, the job is RUNNING\n`);
      expect(context.output().err).toContain(`docket signals: idempotency key ${fake.reconciles[0]!.idempotencyKey}`);
    }
  });
});

describe('job lifecycle command arguments', () => {
  it('reads delete (soft by default, --hard), restore, retry, hold, release and deletion', () => {
    expect(parseDeleteArguments([JOB])).toEqual({ jobId: JOB, hard: false, owner: { url: DEFAULT_ADMISSION_URL, token: undefined, key: undefined } });
    expect(parseDeleteArguments(['--hard', JOB, '--key', USER_KEY])).toMatchObject({ jobId: JOB, hard: true, owner: { key: USER_KEY } });
    expect(parseRestoreArguments([JOB, '--token', 't'])).toMatchObject({ jobId: JOB, owner: { token: 't' } });
    expect(parseRetryArguments([JOB])).toMatchObject({ jobId: JOB });
    expect(parseLegalHoldArguments(true, [JOB])).toEqual({ held: true, jobId: JOB, call: { url: DEFAULT_ADMISSION_URL, token: undefined } });
    expect(parseLegalHoldArguments(false, [JOB, '--url', 'https://docket.example'])).toMatchObject({ held: false, call: { url: 'https://docket.example' } });
    expect(parseDeletionArguments([DELETION])).toEqual({ deletionId: DELETION, wait: false, call: { url: DEFAULT_ADMISSION_URL, token: undefined } });
    expect(parseDeletionArguments([DELETION, '--wait'])).toMatchObject({ wait: true });
  });

  it('reads retention ages in days, hours, minutes and seconds, and no age as clearing', () => {
    expect(parseRetentionArguments(['reports', '--soft-delete-after', '30d', '--hard-delete-after', '12h'])).toEqual({
      queue: 'reports',
      softDeleteAfterSeconds: 2_592_000n,
      hardDeleteAfterSeconds: 43_200n,
      call: { url: DEFAULT_ADMISSION_URL, token: undefined },
    });
    expect(parseRetentionArguments(['reports', '--hard-delete-after=90m'])).toMatchObject({ softDeleteAfterSeconds: undefined, hardDeleteAfterSeconds: 5_400n });
    expect(parseRetentionArguments(['reports', '--soft-delete-after', '45s'])).toMatchObject({ softDeleteAfterSeconds: 45n, hardDeleteAfterSeconds: undefined });
    expect(parseRetentionArguments(['reports'])).toMatchObject({ softDeleteAfterSeconds: undefined, hardDeleteAfterSeconds: undefined });
  });

  it.each([
    [() => parseDeleteArguments([]), /a job id is required/],
    [() => parseDeleteArguments([JOB, 'job_other']), /one job at a time \(also got job_other\)/],
    [() => parseDeleteArguments([JOB, '--hard=yes']), /--hard/],
    [() => parseDeleteArguments([JOB, '--key', 'short']), /--key must be 16 to 128 characters/],
    [() => parseRestoreArguments(['']), /a job id is required/],
    [() => parseRetryArguments([JOB, '--wait']), /Unknown option '--wait'/],
    [() => parseLegalHoldArguments(true, []), /a job id is required/],
    [() => parseLegalHoldArguments(true, [JOB, '--key', USER_KEY]), /Unknown option '--key'/],
    [() => parseLegalHoldArguments(false, [JOB, '--token=']), /--token must not be empty/],
    [() => parseDeletionArguments([]), /a deletion id is required/],
    [() => parseDeletionArguments([DELETION, DELETION]), /one deletion at a time/],
    [() => parseDeletionArguments([DELETION, '--key', USER_KEY]), /Unknown option '--key'/],
    [() => parseRetentionArguments([]), /a queue is required/],
    [() => parseRetentionArguments(['Reports']), /the queue must match/],
    [() => parseRetentionArguments(['reports', 'more']), /one queue at a time/],
    [() => parseRetentionArguments(['reports', '--key', USER_KEY]), /Unknown option '--key'/],
    [() => parseRetentionArguments(['reports', '--soft-delete-after', '30']), /--soft-delete-after must be a whole number and one unit/],
    [() => parseRetentionArguments(['reports', '--soft-delete-after', '1.5h']), /--soft-delete-after must be a whole number/],
    [() => parseRetentionArguments(['reports', '--hard-delete-after', '1h30m']), /--hard-delete-after must be a whole number/],
    [() => parseRetentionArguments(['reports', '--hard-delete-after', '2w']), /--hard-delete-after must be a whole number/],
    [() => parseRetentionArguments(['reports', '--hard-delete-after=-1d']), /--hard-delete-after must be a whole number/],
    [() => parseRetentionArguments(['reports', '--hard-delete-after', '30D']), /--hard-delete-after must be a whole number/],
    [() => parseRetentionArguments(['reports', '--hard-delete-after', '']), /--hard-delete-after must be a whole number/],
    [() => parseRetentionArguments(['reports', '--soft-delete-after', '0d']), /--soft-delete-after must be at least 1s/],
    [() => parseRetentionArguments(['reports', '--soft-delete-after', '3652501d']), /--soft-delete-after must be at most 315576000000s/],
  ])('refuses bad arguments as usage errors (%#)', (parse, message) => {
    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(message);
  });

  it('lists the commands and exits 2 with a pointer to their help on a usage error', async () => {
    const context = capture();
    expect(await runCli(['help'], context)).toBe(0);
    const { out } = context.output();
    for (const name of ['retry', 'delete', 'restore', 'deletion', 'hold', 'release', 'retention']) expect(out).toMatch(new RegExp(`\\n {2}${name} +\\S`));
    for (const [argv, topic] of [
      [['delete'], 'delete'],
      [['restore', JOB, JOB], 'restore'],
      [['retry'], 'retry'],
      [['deletion'], 'deletion'],
      [['hold', JOB, '--key', USER_KEY], 'hold'],
      [['release'], 'release'],
      [['retention', 'reports', '--soft-delete-after', '1y'], 'retention'],
    ] as const) {
      const run = capture();
      expect(await runCli([...argv], run)).toBe(2);
      expect(run.output().err).toContain(`See: docket help ${topic}`);
    }
  });

  it('explains each command, naming its RPC and the token it needs', async () => {
    const help = async (name: string) => {
      const context = capture();
      expect(await runCli(['help', name], context)).toBe(0);
      return context.output().out;
    };
    expect(await help('delete')).toMatch(/^Usage: docket delete <job_id> \[--hard\] \[--key <key>\]/);
    expect(await help('delete')).toContain('Nothing can be\nrestored after --hard');
    expect(await help('delete')).toContain('docket deletion <deletion_id>');
    expect(await help('restore')).toContain('RestoreJob');
    expect(await help('retry')).toContain('FAILED, CANCELLED\nor INTERRUPTED');
    expect(await help('deletion')).toMatch(/--wait +ask again every 500 ms/);
    for (const name of ['hold', 'release', 'retention']) {
      const text = await help(name);
      expect(text).toContain('--token <jwt>   bearer token of an admin');
      expect(text).not.toContain('--key');
    }
    expect(await help('retention')).toContain('Without either option the queue\'s policy is cleared.');
  });
});

describe('docket delete and docket restore', () => {
  it('soft-deletes with a generated key, printed to standard error, and prints the lifecycle', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await deleteJob(fake.client, parseDeleteArguments([JOB]), context)).toBe(0);
    expect(fake.hardDeletes).toEqual([]);
    expect(fake.softDeletes).toHaveLength(1);
    const key = fake.softDeletes[0]!.idempotencyKey;
    expect(fake.softDeletes[0]).toMatchObject({ jobId: JOB });
    expect(key).toMatch(KEY_GRAMMAR);
    expect(context.output()).toEqual({
      out: `soft-deleted ${JOB}: lifecycle SOFT_DELETED\n`,
      err: `docket delete: idempotency key ${key} (to retry this request, repeat it with --key ${key})\n`,
    });
  });

  it('with --hard starts the deletion and prints its id and state', async () => {
    const fake = fakeAdmission({ replayed: true });
    const context = capture();
    expect(await deleteJob(fake.client, parseDeleteArguments([JOB, '--hard', '--key', USER_KEY]), context)).toBe(0);
    expect(fake.softDeletes).toEqual([]);
    expect(fake.hardDeletes[0]).toMatchObject({ idempotencyKey: USER_KEY, jobId: JOB });
    expect(context.output()).toEqual({ out: `deleting ${JOB}: deletion ${DELETION} QUEUED (replayed: this key was used before)\n`, err: '' });
  });

  it('prints a held or running job\'s refusal as its code and reason and exits 1', async () => {
    const fake = fakeAdmission({ fail: refusal(Code.FailedPrecondition, 'ILLEGAL_TRANSITION', 'the job is under legal hold') });
    const context = capture();
    expect(await deleteJob(fake.client, parseDeleteArguments([JOB, '--hard', '--key', USER_KEY]), context)).toBe(1);
    expect(context.output()).toEqual({ out: '', err: 'docket delete: failed_precondition ILLEGAL_TRANSITION: the job is under legal hold\n' });
  });

  it('restores and prints the lifecycle', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await restoreJob(fake.client, parseRestoreArguments([JOB, '--key', USER_KEY]), context)).toBe(0);
    expect(fake.restores[0]).toMatchObject({ idempotencyKey: USER_KEY, jobId: JOB });
    expect(context.output()).toEqual({ out: `restored ${JOB}: lifecycle ACTIVE\n`, err: '' });
  });
});

describe('docket retry', () => {
  it('re-queues the job under the key and prints its status', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await retryJob(fake.client, parseRetryArguments([JOB]), context)).toBe(0);
    const key = fake.retries[0]!.idempotencyKey;
    expect(fake.retries[0]).toMatchObject({ jobId: JOB });
    expect(context.output()).toEqual({ out: `retried ${JOB}: the job is QUEUED\n`, err: `docket retry: idempotency key ${key} (to retry this request, repeat it with --key ${key})\n` });
  });

  it('prints the refusal of a SUCCEEDED job', async () => {
    const fake = fakeAdmission({ fail: refusal(Code.FailedPrecondition, 'ILLEGAL_TRANSITION', 'SUCCEEDED jobs are not retried') });
    const context = capture();
    expect(await retryJob(fake.client, parseRetryArguments([JOB, '--key', USER_KEY]), context)).toBe(1);
    expect(context.output().err).toBe('docket retry: failed_precondition ILLEGAL_TRANSITION: SUCCEEDED jobs are not retried\n');
  });
});

describe('docket deletion', () => {
  const at = (iso: string) => ({ seconds: BigInt(Date.parse(iso) / 1000), nanos: 0 });
  const created = at('2026-01-01T00:00:00Z');
  /** Records the sleeps `--wait` asks for, without sleeping. */
  const polling = () => {
    const sleeps: number[] = [];
    return { sleeps, intervalMs: 500, sleep: async (ms: number) => void sleeps.push(ms) };
  };

  it('formats each state with the facts that apply to it', () => {
    const base = { deletionId: DELETION, jobId: JOB, jobStatus: JobStatus.FAILED, createdAt: created, attemptCount: 1 };
    expect(formatDeletion(create(DeletionSchema, { ...base, state: DeletionState.RUNNING, updatedAt: at('2026-01-01T00:00:01Z') }))).toBe(
      [
        `deletion ${DELETION} of ${JOB}: RUNNING`,
        '  job status:  FAILED',
        '  created:     2026-01-01T00:00:00.000Z',
        '  updated:     2026-01-01T00:00:01.000Z',
        '  attempts:    1',
        '',
      ].join('\n'),
    );
    const completed = formatDeletion(
      create(DeletionSchema, { ...base, state: DeletionState.COMPLETED, updatedAt: at('2026-01-01T00:00:03Z'), completedAt: { ...at('2026-01-01T00:00:02Z'), nanos: 500_000_000 } }),
    );
    expect(completed).toContain(`: COMPLETED\n`);
    expect(completed).toContain('  completed:   2026-01-01T00:00:02.500Z (took 2.5s)\n');
    const waiting = formatDeletion(create(DeletionSchema, { ...base, state: DeletionState.RETRY_WAIT, retryNotBefore: at('2026-01-01T00:01:00Z') }));
    expect(waiting).toContain('  updated:     unknown\n');
    expect(waiting).toContain('  retry after: 2026-01-01T00:01:00.000Z\n');
    expect(waiting).not.toContain('blocked');
    const blocked = formatDeletion(create(DeletionSchema, { ...base, state: DeletionState.BLOCKED, blockedReason: 'EFFECT_STORE_UNAVAILABLE' }));
    expect(blocked).toContain('  blocked:     EFFECT_STORE_UNAVAILABLE\n');
    expect(blocked).not.toContain('completed');
    expect(formatDeletion(create(DeletionSchema, { ...base, state: DeletionState.BLOCKED }))).toContain('  blocked:     no reason given\n');
  });

  it('without --wait shows the deletion once, whatever its state', async () => {
    const fake = fakeAdmission({ deletions: [{ state: DeletionState.RUNNING }, { state: DeletionState.COMPLETED }] });
    const context = capture();
    const wait = polling();
    expect(await showDeletion(fake.client, parseDeletionArguments([DELETION]), context, wait)).toBe(0);
    expect(fake.deletionGets).toEqual([DELETION]);
    expect(wait.sleeps).toEqual([]);
    expect(context.output().out).toMatch(new RegExp(`^deletion ${DELETION} of ${JOB}: RUNNING\\n`));
    expect(context.output().err).toBe('');
  });

  it('with --wait polls every 500 ms until COMPLETED, printing each new state, and exits 0', async () => {
    const fake = fakeAdmission({
      deletions: [{ state: DeletionState.QUEUED }, { state: DeletionState.RUNNING }, { state: DeletionState.RUNNING }, { state: DeletionState.RETRY_WAIT }, { state: DeletionState.COMPLETED }],
    });
    const context = capture();
    const wait = polling();
    expect(await showDeletion(fake.client, parseDeletionArguments([DELETION, '--wait']), context, wait)).toBe(0);
    expect(fake.deletionGets).toHaveLength(5);
    expect(wait.sleeps).toEqual([500, 500, 500, 500]);
    expect(context.output().err).toBe(
      [
        `docket deletion: waiting for ${DELETION} to complete (now QUEUED)`,
        `docket deletion: ${DELETION} RUNNING`,
        `docket deletion: ${DELETION} RETRY_WAIT`,
        `docket deletion: ${DELETION} COMPLETED`,
        '',
      ].join('\n'),
    );
    expect(context.output().out).toMatch(new RegExp(`^deletion ${DELETION} of ${JOB}: COMPLETED\\n`));
  });

  it('with --wait stops at BLOCKED, prints the reason and exits 1', async () => {
    const fake = fakeAdmission({ deletions: [{ state: DeletionState.RUNNING }, { state: DeletionState.BLOCKED, blockedReason: 'EFFECT_STORE_UNAVAILABLE' }, { state: DeletionState.COMPLETED }] });
    const context = capture();
    const wait = polling();
    expect(await showDeletion(fake.client, parseDeletionArguments([DELETION, '--wait']), context, wait)).toBe(1);
    expect(fake.deletionGets).toHaveLength(2);
    expect(context.output().out).toContain('  blocked:     EFFECT_STORE_UNAVAILABLE\n');
    expect(context.output().err).toMatch(new RegExp(`\\ndocket deletion: ${DELETION} is BLOCKED \\(EFFECT_STORE_UNAVAILABLE\\): the runner tries again`));
  });

  it('with --wait on a deletion already COMPLETED does not poll', async () => {
    const fake = fakeAdmission({ deletions: [{ state: DeletionState.COMPLETED }] });
    const context = capture();
    const wait = polling();
    expect(await showDeletion(fake.client, parseDeletionArguments([DELETION, '--wait']), context, wait)).toBe(0);
    expect(wait.sleeps).toEqual([]);
    expect(context.output().err).toBe('');
  });

  it('prints NOT_FOUND as its code and reason', async () => {
    const fake = fakeAdmission({ fail: refusal(Code.NotFound, 'NOT_FOUND', 'no such deletion') });
    const context = capture();
    expect(await showDeletion(fake.client, parseDeletionArguments([DELETION, '--wait']), context, polling())).toBe(1);
    expect(context.output()).toEqual({ out: '', err: 'docket deletion: not_found NOT_FOUND: no such deletion\n' });
  });
});

describe('docket hold, docket release and docket retention', () => {
  it('holds and releases the job and prints the hold as the job now has it', async () => {
    for (const [held, line] of [[true, `held ${JOB}: legal hold on\n`], [false, `released ${JOB}: legal hold off\n`]] as const) {
      const fake = fakeAdmission();
      const context = capture();
      expect(await setLegalHold(fake.client, parseLegalHoldArguments(held, [JOB]), context)).toBe(0);
      expect(fake.holds).toEqual([expect.objectContaining({ jobId: JOB, held })]);
      expect(context.output()).toEqual({ out: line, err: '' });
    }
    const stillHeld = fakeAdmission({ job: { legalHold: true } });
    const context = capture();
    expect(await setLegalHold(stillHeld.client, parseLegalHoldArguments(false, [JOB]), context)).toBe(0);
    expect(context.output().out).toBe(`released ${JOB}: legal hold on\n`);
  });

  it('asks for an admin token when the service refuses a user token', async () => {
    const fake = fakeAdmission({ fail: refusal(Code.PermissionDenied, 'PERMISSION_DENIED', 'admins only') });
    const context = capture();
    expect(await setLegalHold(fake.client, parseLegalHoldArguments(true, [JOB]), context)).toBe(1);
    expect(context.output().err).toBe('docket hold: permission_denied PERMISSION_DENIED: admins only (this needs an admin token: pass --token, or unset DOCKET_TOKEN to mint one)\n');
    const retention = capture();
    expect(await setRetentionPolicy(fake.client, parseRetentionArguments(['reports']), retention)).toBe(1);
    expect(retention.output().err).toContain('docket retention: permission_denied PERMISSION_DENIED: admins only (this needs an admin token');
  });

  it('sends the ages as durations and prints the policy as stored', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await setRetentionPolicy(fake.client, parseRetentionArguments(['reports', '--soft-delete-after', '30d', '--hard-delete-after', '90m']), context)).toBe(0);
    const policy = fake.policies[0]!.policy!;
    expect(policy.queue).toBe('reports');
    expect(policy.softDeleteAfter).toMatchObject({ seconds: 2_592_000n, nanos: 0 });
    expect(policy.hardDeleteAfter).toMatchObject({ seconds: 5_400n, nanos: 0 });
    expect(context.output()).toEqual({ out: 'retention of reports: soft-delete after 30d, hard-delete after 90m\n', err: '' });
  });

  it('clears the policy when given no age, and prints what the service stored rather than what was sent', async () => {
    const cleared = fakeAdmission();
    const context = capture();
    expect(await setRetentionPolicy(cleared.client, parseRetentionArguments(['reports']), context)).toBe(0);
    const sent = cleared.policies[0]!.policy!;
    expect(sent.queue).toBe('reports');
    expect(sent.softDeleteAfter).toBeUndefined();
    expect(sent.hardDeleteAfter).toBeUndefined();
    expect(context.output().out).toBe('retention of reports: none (jobs are kept until deleted)\n');

    const stored = fakeAdmission({ storedPolicy: create(SetRetentionPolicyRequestSchema, { policy: { queue: 'reports', hardDeleteAfter: { seconds: 129_600n } } }).policy });
    const other = capture();
    expect(await setRetentionPolicy(stored.client, parseRetentionArguments(['reports', '--hard-delete-after', '36h']), other)).toBe(0);
    expect(other.output().out).toBe('retention of reports: soft-delete never, hard-delete after 36h\n');
  });
});
