import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import {
  AdmissionService,
  SignalReconcileAction,
  type DecideApprovalRequest,
  type ReconcileSignalsRequest,
  type SendSignalRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { SignalState } from '@docket/proto/docket/common/v1/signal_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { decideApproval, parseDecisionArguments } from './approval-commands.js';
import { UsageError, type CliContext } from './command.js';
import { DEFAULT_ADMISSION_URL, generateIdempotencyKey } from './owner-call.js';
import { runCli } from './run-cli.js';
import { parseReconcileArguments, parseSignalArguments, reconcileSignals, sendSignal } from './signal-commands.js';

const JOB = 'job_01jdv2x0000000000000000000';
const APPROVAL = 'apr_01jdv2x0000000000000000000';
const USER_KEY = 'my-own-key-0123456789';
const KEY_GRAMMAR = /^[A-Za-z0-9._~-]{16,128}$/;

function capture(): CliContext & { output: () => { out: string; err: string } } {
  let out = '';
  let err = '';
  return { env: {}, cwd: '/nonexistent', out: (text) => (out += text), err: (text) => (err += text), output: () => ({ out, err }) };
}

function refusal(code: Code, reason: string, message: string): ConnectError {
  return new ConnectError(message, code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket' } }]);
}

/** An in-memory AdmissionService recording what it was asked; `fail` makes the effecting call throw. */
function fakeAdmission(options: { job?: MessageInitShape<typeof JobSchema>; fail?: ConnectError; replayed?: boolean } = {}) {
  const decisions: DecideApprovalRequest[] = [];
  const signals: SendSignalRequest[] = [];
  const reconciles: ReconcileSignalsRequest[] = [];
  const gets: string[] = [];
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
    });
  });
  return { client: createClient(AdmissionService, transport), decisions, signals, reconciles, gets };
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
