import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, fromJsonString, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createRouterTransport } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { createClient } from '@docket/client';
import { GENESIS_HASH, computeEventHash } from '@docket/contracts';
import {
  AdmissionService,
  SubmitJobResponseSchema,
  type CancelJobRequest,
  type ListJobsRequest,
  type SubmitJobRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobLifecycle, JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ProgressSchema } from '@docket/proto/docket/common/v1/progress_pb.js';
import { EventService, type StreamJobEventsResponseSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { UsageError } from './command.js';
import { getJob, parseGetArguments } from './get-command.js';
import { describeClientFailure } from './job-client.js';
import { formatJob, formatJobTable } from './job-summary.js';
import { listJobs, parseListArguments } from './list-command.js';
import { DEFAULT_ADMISSION_URL } from './owner-call.js';
import { runCli } from './run-cli.js';
import { parseSubmitArguments, submitJob, type SubmitArguments } from './submit-command.js';
import { submitFile } from './submit-file.js';
import { changeJob, parseTransitionArguments } from './transition-commands.js';
import { DEFAULT_EVENTS_URL } from './verify-command.js';
import { parseWatchArguments, watchJob } from './watch-command.js';
import { formatProgressBar } from './watch-output.js';
import { capture } from './testing/captured-context.js';
import { refusal } from './testing/service-refusal.js';

/*
 * The commands on @docket/client (submit, get, list, watch, cancel, pause,
 * resume) against in-memory Admission and Event services: what they send,
 * what they print and how they exit. owner-flow.test.ts runs the built
 * binary against a real cluster.
 */

const JOB = 'job_01jdv2x0000000000000000000';
const USER_KEY = 'my-own-key-0123456789';
const KEY_GRAMMAR = /^[A-Za-z0-9._~-]{16,128}$/;
const DIGEST = 'cd'.repeat(32);
const ADMISSION = { name: 'admission', url: DEFAULT_ADMISSION_URL } as const;

const at = (iso: string) => timestampFromDate(new Date(iso));

function job(overrides: MessageInitShape<typeof JobSchema> = {}): Job {
  return create(JobSchema, {
    id: JOB,
    queue: 'emails',
    status: JobStatus.QUEUED,
    lifecycle: JobLifecycle.ACTIVE,
    attemptCount: 0,
    maxAttempts: 3,
    createdAt: at('2026-01-01T00:00:00Z'),
    updatedAt: at('2026-01-01T00:00:01Z'),
    revision: 1n,
    latestSequence: 1n,
    ...overrides,
  });
}

/** A verified journal of `types`, in order, for {@link JOB} under {@link DIGEST}. */
function journal(types: readonly string[]): Event[] {
  const events: Event[] = [];
  let previousHash = GENESIS_HASH;
  types.forEach((type, index) => {
    const sequence = index + 1;
    const occurredAt = new Date(Date.UTC(2026, 0, 1, 0, 0, sequence));
    const payload = { step: sequence };
    const hash = computeEventHash({ jobId: JOB, requestDigest: DIGEST, sequence, previousHash, type, payload, occurredAt });
    events.push(create(EventSchema, { jobId: JOB, sequence: BigInt(sequence), type, payload, occurredAt: timestampFromDate(occurredAt), previousHash, hash }));
    previousHash = hash;
  });
  return events;
}

type StreamFrame = MessageInitShape<typeof StreamJobEventsResponseSchema>;

/**
 * A client of in-memory services recording what they were asked. GetJob
 * answers `current`; ListJobs serves `listed` in pages of the requested
 * size (page tokens are offsets); the event stream serves `stream` (then
 * `end`) after ReadJobEvents announced `journal`; `fail` makes the
 * effecting admission calls throw.
 */
function fakeServices(options: { current?: Job; listed?: Job[]; events?: Event[]; stream?: StreamFrame[]; fail?: ConnectError; replayed?: boolean } = {}) {
  const submits: SubmitJobRequest[] = [];
  const lists: ListJobsRequest[] = [];
  const changes: { rpc: string; request: Pick<CancelJobRequest, 'idempotencyKey' | 'jobId'> }[] = [];
  const events = options.events ?? [];
  const transport = createRouterTransport((router) => {
    router.service(AdmissionService, {
      submitJob(request) {
        submits.push(request);
        if (options.fail) throw options.fail;
        return { job: job({ queue: request.queue, label: request.label, priority: request.priority, input: request.input }), replayed: options.replayed ?? false, idempotencyExpiresAt: at('2026-01-02T00:00:00Z') };
      },
      submitJobs(request) {
        submits.push(...request.items);
        return { results: request.items.map((item) => ({ result: { case: 'submitted' as const, value: { job: job({ queue: item.queue, input: item.input }), replayed: false } } })) };
      },
      getJob(request) {
        if (options.fail) throw options.fail;
        return { job: options.current ?? job({ id: request.jobId }) };
      },
      listJobs(request) {
        lists.push(request);
        if (options.fail) throw options.fail;
        const from = Number(request.pageToken || '0');
        const all = options.listed ?? [];
        const to = Math.min(from + (request.pageSize || 50), all.length);
        return { jobs: all.slice(from, to), nextPageToken: to < all.length ? String(to) : '', eventCursor: 'cursor' };
      },
      cancelJob(request) {
        changes.push({ rpc: 'CancelJob', request });
        if (options.fail) throw options.fail;
        return { job: job({ id: request.jobId, status: JobStatus.CANCELLED }), replayed: options.replayed ?? false };
      },
      pauseJob(request) {
        changes.push({ rpc: 'PauseJob', request });
        return { job: job({ id: request.jobId, status: JobStatus.PAUSED }), replayed: false };
      },
      resumeJob(request) {
        changes.push({ rpc: 'ResumeJob', request });
        return { job: job({ id: request.jobId, status: JobStatus.QUEUED }), replayed: false };
      },
    });
    router.service(EventService, {
      readJobEvents: (request) => ({
        events: events.filter((event) => event.sequence > request.afterSequence).slice(0, request.pageSize || 100),
        latestSequence: BigInt(events.length),
        requestDigest: DIGEST,
      }),
      async *streamJobEvents(): AsyncGenerator<StreamFrame> {
        yield* options.stream ?? [];
        yield { frame: { case: 'end', value: {} } };
      },
      watchJobs: async function* () {},
    });
  });
  const client = createClient({ transports: { admission: transport, events: transport }, retry: { tries: 1 }, reconnect: { tries: 1, initialDelayMs: 1, maxDelayMs: 1 } });
  return { client, submits, lists, changes };
}

const page = (events: Event[]): StreamFrame => ({ frame: { case: 'page', value: { events } } });
const progress = (completedUnits: bigint, totalUnits: bigint, message = ''): StreamFrame => ({ frame: { case: 'progress', value: { completedUnits, totalUnits, message } } });

describe('arguments of submit, get, list, watch, cancel, pause and resume', () => {
  it('reads submit with its defaults and with every option', () => {
    expect(parseSubmitArguments(['--queue', 'emails'])).toEqual({
      queue: 'emails',
      input: {},
      label: '',
      priority: 0,
      uniqueKey: undefined,
      concurrencyKey: undefined,
      attemptTimeoutSeconds: undefined,
      heartbeatTimeoutSeconds: undefined,
      after: [],
      runOnParentFailure: false,
      json: false,
      watch: false,
      eventsUrl: DEFAULT_EVENTS_URL,
      owner: { url: DEFAULT_ADMISSION_URL, token: undefined, key: undefined },
    });
    expect(
      parseSubmitArguments([
        '--queue', 'emails', '--input', '{"to":"a@example.com"}', '--label', 'welcome', '--priority=-5', '--unique-key', 'tenant:7', '--concurrency-key', 'tenant-7',
        '--attempt-timeout', '15m', '--heartbeat-timeout', '30s', '--after', 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa,job_bbbbbbbbbbbbbbbbbbbbbbbbbb', '--after', 'job_cccccccccccccccccccccccccc',
        '--on-parent-failure', 'RUN', '--key', USER_KEY, '--json', '--watch', '--events-url', 'https://events.example', '--token', 't',
      ]),
    ).toEqual({
      queue: 'emails',
      input: { to: 'a@example.com' },
      label: 'welcome',
      priority: -5,
      uniqueKey: 'tenant:7',
      concurrencyKey: 'tenant-7',
      attemptTimeoutSeconds: 900n,
      heartbeatTimeoutSeconds: 30n,
      after: ['job_aaaaaaaaaaaaaaaaaaaaaaaaaa', 'job_bbbbbbbbbbbbbbbbbbbbbbbbbb', 'job_cccccccccccccccccccccccccc'],
      runOnParentFailure: true,
      json: true,
      watch: true,
      eventsUrl: 'https://events.example',
      owner: { url: DEFAULT_ADMISSION_URL, token: 't', key: USER_KEY },
    });
  });

  it('reads list filters: repeated or comma-separated statuses in any case, a limit, deleted jobs', () => {
    expect(parseListArguments([])).toEqual({ queue: undefined, statuses: [], includeDeleted: false, parent: undefined, limit: undefined, json: false, call: { url: DEFAULT_ADMISSION_URL, token: undefined } });
    expect(parseListArguments(['--queue', 'emails', '--status', 'failed', '--status', 'CANCELLED,job_status_interrupted', '--status', 'FAILED', '--include-deleted', '--limit', '7', '--json'])).toMatchObject({
      queue: 'emails',
      statuses: [JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.INTERRUPTED],
      includeDeleted: true,
      limit: 7,
      json: true,
    });
  });

  it('reads get, watch and the transitions with one job id', () => {
    expect(parseGetArguments([JOB, '--json'])).toEqual({ jobId: JOB, json: true, call: { url: DEFAULT_ADMISSION_URL, token: undefined } });
    expect(parseWatchArguments([JOB])).toEqual({ jobId: JOB, json: false, call: { url: DEFAULT_ADMISSION_URL, token: undefined, eventsUrl: DEFAULT_EVENTS_URL } });
    expect(parseWatchArguments([JOB, '--events-url', 'https://events.example', '--url', 'https://admission.example'])).toMatchObject({
      call: { url: 'https://admission.example', eventsUrl: 'https://events.example' },
    });
    expect(parseTransitionArguments('pause', [JOB, '--key', USER_KEY])).toEqual({ transition: 'pause', jobId: JOB, owner: { url: DEFAULT_ADMISSION_URL, token: undefined, key: USER_KEY } });
  });

  it.each([
    [() => parseSubmitArguments([]), /--queue is required/],
    [() => parseSubmitArguments(['emails']), /no positional arguments .*--queue/],
    [() => parseSubmitArguments(['--queue', 'q', '--input', '{to:1}']), /--input must be JSON/],
    [() => parseSubmitArguments(['--queue', 'q', '--input', '"text"']), /--input must be a JSON object/],
    [() => parseSubmitArguments(['--queue', 'q', '--priority', '1.5']), /--priority must be a whole number/],
    [() => parseSubmitArguments(['--queue', 'q', '--priority', '2147483648']), /--priority must be a whole number/],
    [() => parseSubmitArguments(['--queue', 'q', '--key', 'short']), /--key must be 16 to 128/],
    [() => parseListArguments(['--status', 'DONE']), /--status must be one of WAITING, QUEUED, RUNNING, .*INTERRUPTED \(got "DONE"\)/],
    [() => parseListArguments(['--status', 'unspecified']), /--status must be one of/],
    [() => parseListArguments(['--limit', '0']), /--limit must be a whole number of at least 1/],
    [() => parseListArguments(['--limit', 'ten']), /--limit must be/],
    [() => parseListArguments(['emails']), /no positional arguments/],
    [() => parseGetArguments([]), /a job id is required/],
    [() => parseWatchArguments([JOB, JOB]), /one job at a time/],
    [() => parseWatchArguments([JOB, '--events-url', 'localhost:7403']), /--events-url must be an http/],
    [() => parseTransitionArguments('cancel', [JOB, '--hard']), /Unknown option '--hard'/],
  ])('refuses bad arguments as usage errors (%#)', (parse, message) => {
    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(message);
  });

  it('lists the commands, explains each with its exit codes, and exits 2 on a usage error', async () => {
    const context = capture();
    expect(await runCli(['help'], context)).toBe(0);
    for (const name of ['submit', 'get', 'list', 'watch', 'cancel', 'pause', 'resume']) expect(context.output().out).toMatch(new RegExp(`\\n {2}${name} +\\w`));
    const watchHelp = capture();
    expect(await runCli(['help', 'watch'], watchHelp)).toBe(0);
    expect(watchHelp.output().out).toMatch(/^Usage: docket watch <job_id>/);
    expect(watchHelp.output().out).toContain('Exit status: 0 SUCCEEDED, 3 FAILED, 4 CANCELLED, 5 INTERRUPTED; 1 the\nwatch failed');
    for (const name of ['submit', 'get', 'list', 'cancel', 'pause', 'resume']) {
      const help = capture();
      expect(await runCli([name, '--help'], help)).toBe(0);
      expect(help.output().out).toMatch(new RegExp(`^Usage: docket ${name} `));
      expect(help.output().out).toMatch(/\nExit status: 0 .*, 1 .*, 2 bad arguments\.\n$/s);
    }
    for (const [argv, topic] of [[['submit'], 'submit'], [['get'], 'get'], [['list', '--status', 'x'], 'list'], [['watch'], 'watch'], [['resume', JOB, '--nope'], 'resume']] as const) {
      const run = capture();
      expect(await runCli([...argv], run)).toBe(2);
      expect(run.output().err).toContain(`See: docket help ${topic}`);
    }
  });
});

/** `docket submit` arguments for one job (not `--file`). */
function singleJob(args: readonly string[]): SubmitArguments {
  const parsed = parseSubmitArguments(args);
  if ('file' in parsed) throw new Error('expected one job, not --file');
  return parsed;
}

describe('docket submit', () => {
  it('submits with a generated key printed once to standard error, and prints the job', async () => {
    const fake = fakeServices();
    const context = capture();
    expect(await submitJob(fake.client, singleJob(['--queue', 'emails', '--input', '{"n":1}', '--label', 'welcome', '--priority', '4']), context)).toBe(0);
    expect(fake.submits).toHaveLength(1);
    const request = fake.submits[0]!;
    expect(request).toMatchObject({ queue: 'emails', input: { n: 1 }, label: 'welcome', priority: 4 });
    expect(request.idempotencyKey).toMatch(KEY_GRAMMAR);
    expect(context.output()).toEqual({
      out: `submitted ${JOB} to emails: QUEUED\n`,
      err: `docket submit: idempotency key ${request.idempotencyKey} (to retry this request, repeat it with --key ${request.idempotencyKey})\n`,
    });
  });

  it('uses --key as given, never prints it, and says when the answer is a replay', async () => {
    const fake = fakeServices({ replayed: true });
    const context = capture();
    expect(await submitJob(fake.client, singleJob(['--queue', 'emails', '--key', USER_KEY]), context)).toBe(0);
    expect(fake.submits[0]!.idempotencyKey).toBe(USER_KEY);
    const { out, err } = context.output();
    expect(out).toBe(`replayed ${JOB} to emails: QUEUED (this key was used before: the job as first admitted)\n`);
    expect(out + err).not.toContain(USER_KEY);
  });

  it('with --json prints the SubmitJob response as one line of proto3 JSON, the key still on standard error', async () => {
    const fake = fakeServices();
    const context = capture();
    expect(await submitJob(fake.client, singleJob(['--queue', 'emails', '--json']), context)).toBe(0);
    const { out, err } = context.output();
    expect(out.endsWith('\n') && out.indexOf('\n') === out.length - 1).toBe(true);
    const response = fromJsonString(SubmitJobResponseSchema, out);
    expect(response.job?.id).toBe(JOB);
    expect(response.replayed).toBe(false);
    expect(response.idempotencyExpiresAt).toEqual(at('2026-01-02T00:00:00Z'));
    expect(JSON.parse(out)).toMatchObject({ job: { id: JOB, status: 'JOB_STATUS_QUEUED', revision: '1' } });
    expect(err).toContain(`idempotency key ${fake.submits[0]!.idempotencyKey}`);
  });

  it('prints a refusal as its gRPC code and reason and exits 1', async () => {
    const fake = fakeServices({ fail: refusal(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT', 'the key was used for another request') });
    const context = capture();
    expect(await submitJob(fake.client, singleJob(['--queue', 'emails', '--key', USER_KEY]), context)).toBe(1);
    expect(context.output()).toEqual({ out: '', err: 'docket submit: already_exists IDEMPOTENCY_CONFLICT: the key was used for another request\n' });
  });
});

describe('docket submit --file', () => {
  it('on a terminal redraws a progress bar as each SubmitJobs call is answered, then prints the summary', async () => {
    const fake = fakeServices();
    const context = { ...capture({ terminal: true }), cwd: await mkdtemp(join(tmpdir(), 'docket-file-')) };
    try {
      await writeFile(join(context.cwd, 'jobs.ndjson'), Array.from({ length: 2_500 }, (_, index) => JSON.stringify({ queue: 'emails', input: { index } })).join('\n'));
      const parsed = parseSubmitArguments(['--file', 'jobs.ndjson', '--key', USER_KEY]);
      if (!('file' in parsed)) throw new Error('expected --file arguments');
      expect(await submitFile(fake.client, parsed, context)).toBe(0);
      expect(fake.submits.map((request) => request.idempotencyKey).slice(0, 2)).toEqual([`${USER_KEY}.1`, `${USER_KEY}.2`]);
      expect(context.output().out).toBe(
        `\r[############..................] 1000/2500\r[########################......] 2000/2500\r[##############################] 2500/2500\nsubmitted 2500 jobs from jobs.ndjson (0 replayed, 0 failed)\n`,
      );
    } finally {
      await rm(context.cwd, { recursive: true, force: true });
    }
  });

  it('refuses job flags next to --file, and an empty path', () => {
    expect(() => parseSubmitArguments(['--file', 'jobs.ndjson', '--queue', 'q'])).toThrow(/--file takes every job from the file; drop --queue/);
    expect(() => parseSubmitArguments(['--file', ''])).toThrow(/--file needs a path/);
  });
});

describe('docket get', () => {
  it('prints the facts that apply: failure, progress, pending approval, result', () => {
    const failed = formatJob(
      job({
        status: JobStatus.FAILED,
        label: 'welcome',
        attemptCount: 3,
        failure: { failureClass: FailureClass.TRANSIENT, retryable: true, message: 'smtp timeout' },
        progress: { completedUnits: 3n, totalUnits: 10n, message: 'sending' },
      }),
    );
    expect(failed).toBe(
      [
        `job ${JOB}: FAILED`,
        '  queue:       emails',
        '  label:       "welcome"',
        '  lifecycle:   ACTIVE',
        '  attempts:    3 of 3',
        '  progress:    3/10 "sending"',
        '  failure:     TRANSIENT (retryable): smtp timeout',
        '  created:     2026-01-01T00:00:00.000Z',
        '  updated:     2026-01-01T00:00:01.000Z',
        '  revision:    1, latest event 1',
        '',
      ].join('\n'),
    );
    const paused = formatJob(job({ status: JobStatus.PAUSED, pendingApproval: { approvalId: 'apr_1', prompt: 'Ship it?', requestedAt: at('2026-01-01T00:00:02Z') } }));
    expect(paused).toContain('  approval:    apr_1 "Ship it?", requested 2026-01-01T00:00:02.000Z\n');
    expect(paused).not.toContain('failure');
    const succeeded = formatJob(job({ status: JobStatus.SUCCEEDED, result: { sent: true }, legalHold: true, unresolvedSignals: 2 }));
    expect(succeeded).toContain('  result:      {"sent":true}\n');
    expect(succeeded).toContain('  signals:     2 UNKNOWN (docket signals reconcile)\n');
    expect(succeeded).toContain('  legal hold:  on\n');
    expect(succeeded).not.toMatch(/progress|approval|label/);
  });

  it('prints the job as one line of proto3 JSON with --json, and NOT_FOUND as code and reason', async () => {
    const fake = fakeServices({ current: job({ status: JobStatus.RUNNING, input: { n: 2 } }) });
    const context = capture();
    expect(await getJob(fake.client, parseGetArguments([JOB, '--json']), context)).toBe(0);
    const printed = fromJsonString(JobSchema, context.output().out);
    expect(printed).toMatchObject({ id: JOB, status: JobStatus.RUNNING, input: { n: 2 } });

    const missing = fakeServices({ fail: refusal(Code.NotFound, 'NOT_FOUND', 'no such job') });
    const refused = capture();
    expect(await getJob(missing.client, parseGetArguments([JOB]), refused)).toBe(1);
    expect(refused.output()).toEqual({ out: '', err: 'docket get: not_found NOT_FOUND: no such job\n' });
  });
});

describe('docket list', () => {
  const listed = Array.from({ length: 5 }, (_, index) =>
    job({ id: `job_${String(index).padStart(26, '0')}`, queue: index % 2 === 0 ? 'emails' : 'reports-monthly', status: index === 0 ? JobStatus.RETRY_WAIT : JobStatus.FAILED, attemptCount: index }),
  );

  it('formats a table padded to its widest cells, or the heading alone', () => {
    expect(formatJobTable(listed.slice(0, 2))).toBe(
      [
        'ID                              STATUS      QUEUE            ATTEMPTS  UPDATED',
        'job_00000000000000000000000000  RETRY_WAIT  emails           0/3       2026-01-01T00:00:01.000Z',
        'job_00000000000000000000000001  FAILED      reports-monthly  1/3       2026-01-01T00:00:01.000Z',
        '',
      ].join('\n'),
    );
    expect(formatJobTable([])).toBe('ID  STATUS  QUEUE  ATTEMPTS  UPDATED\n');
  });

  it('sends the filter and prints one table row per job', async () => {
    const fake = fakeServices({ listed });
    const context = capture();
    expect(await listJobs(fake.client, parseListArguments(['--queue', 'emails', '--status', 'failed,retry_wait', '--include-deleted']), context)).toBe(0);
    expect(fake.lists[0]!.filter).toMatchObject({ queue: 'emails', statuses: [JobStatus.FAILED, JobStatus.RETRY_WAIT], includeDeleted: true });
    const rows = context.output().out.trimEnd().split('\n');
    expect(rows).toHaveLength(1 + listed.length);
    expect(rows.slice(1).map((row) => row.split(/\s+/)[0])).toEqual(listed.map((j) => j.id));
  });

  it('stops at --limit, asking for no bigger page, and prints JSON lines with --json', async () => {
    const fake = fakeServices({ listed });
    const context = capture();
    expect(await listJobs(fake.client, parseListArguments(['--limit', '2', '--json']), context)).toBe(0);
    expect(fake.lists).toHaveLength(1);
    expect(fake.lists[0]!.pageSize).toBe(2);
    const lines = context.output().out.trimEnd().split('\n');
    expect(lines.map((line) => fromJsonString(JobSchema, line).id)).toEqual([listed[0]!.id, listed[1]!.id]);

    const paged = fakeServices({ listed });
    const all = capture();
    expect(await listJobs(paged.client, parseListArguments(['--limit', '3']), all)).toBe(0);
    expect(all.output().out.trimEnd().split('\n')).toHaveLength(4);
  });

  it('pages through a listing longer than one page', async () => {
    const many = Array.from({ length: 250 }, (_, index) => job({ id: `job_${String(index).padStart(26, '0')}` }));
    const fake = fakeServices({ listed: many });
    const context = capture();
    expect(await listJobs(fake.client, parseListArguments(['--json']), context)).toBe(0);
    expect(fake.lists.map((request) => request.pageToken)).toEqual(['', '200']);
    expect(context.output().out.trimEnd().split('\n')).toHaveLength(250);
  });
});

describe('docket cancel, pause and resume', () => {
  it.each([
    ['cancel', 'CancelJob', `cancelled ${JOB}: the job is CANCELLED\n`],
    ['pause', 'PauseJob', `paused ${JOB}: the job is PAUSED\n`],
    ['resume', 'ResumeJob', `resumed ${JOB}: the job is QUEUED\n`],
  ] as const)('%s calls %s with a generated key and prints the new status', async (transition, rpc, line) => {
    const fake = fakeServices();
    const context = capture();
    expect(await changeJob(fake.client, parseTransitionArguments(transition, [JOB]), context)).toBe(0);
    expect(fake.changes).toHaveLength(1);
    const { request } = fake.changes[0]!;
    expect(fake.changes[0]!.rpc).toBe(rpc);
    expect(request.jobId).toBe(JOB);
    expect(request.idempotencyKey).toMatch(KEY_GRAMMAR);
    expect(context.output()).toEqual({ out: line, err: `docket ${transition}: idempotency key ${request.idempotencyKey} (to retry this request, repeat it with --key ${request.idempotencyKey})\n` });
  });

  it('replays with --key and prints a refusal with code and reason', async () => {
    const replay = fakeServices({ replayed: true });
    const context = capture();
    expect(await changeJob(replay.client, parseTransitionArguments('cancel', [JOB, '--key', USER_KEY]), context)).toBe(0);
    expect(replay.changes[0]!.request.idempotencyKey).toBe(USER_KEY);
    expect(context.output()).toEqual({ out: `cancelled ${JOB}: the job is CANCELLED (replayed: this key was used before)\n`, err: '' });

    const refused = fakeServices({ fail: refusal(Code.FailedPrecondition, 'ILLEGAL_TRANSITION', 'the job has ended') });
    const failed = capture();
    expect(await changeJob(refused.client, parseTransitionArguments('cancel', [JOB, '--key', USER_KEY]), failed)).toBe(1);
    expect(failed.output()).toEqual({ out: '', err: 'docket cancel: failed_precondition ILLEGAL_TRANSITION: the job has ended\n' });
  });
});

describe('docket watch', () => {
  const CANCELLED_JOURNAL = ['job.admitted', 'job.cancelled'];

  it.each([
    ['SUCCEEDED', JobStatus.SUCCEEDED, 0],
    ['FAILED', JobStatus.FAILED, 3],
    ['CANCELLED', JobStatus.CANCELLED, 4],
    ['INTERRUPTED', JobStatus.INTERRUPTED, 5],
  ])('prints every event and progress report, then how the job ended; %s exits %i', async (_name, status, code) => {
    const events = journal(['job.admitted', 'attempt.started', 'job.ended']);
    const fake = fakeServices({
      events,
      stream: [page(events.slice(0, 2)), progress(3n, 10n), progress(4n, 0n, 'counting'), page(events.slice(2))],
      current: job({ status, ...(status === JobStatus.FAILED ? { failure: { failureClass: FailureClass.INVALID_INPUT, message: 'bad' } } : {}) }),
    });
    const context = capture();
    expect(await watchJob(fake.client, parseWatchArguments([JOB]), context)).toBe(code);
    const ending = status === JobStatus.FAILED ? `job ${JOB} ended FAILED: INVALID_INPUT "bad"` : `job ${JOB} ended ${JobStatus[status]}`;
    expect(context.output()).toEqual({ out: ['1 job.admitted', '2 attempt.started', 'progress 3/10', 'progress 4 "counting"', '3 job.ended', ending, ''].join('\n'), err: '' });
  });

  it('on a terminal redraws one progress bar in place, below the events', async () => {
    const events = journal(['job.admitted', 'attempt.started', 'job.succeeded']);
    const fake = fakeServices({
      events,
      stream: [page(events.slice(0, 2)), progress(1n, 4n), progress(2n, 4n, 'half'), page(events.slice(2))],
      current: job({ status: JobStatus.SUCCEEDED, result: { count: 4 } }),
    });
    const context = capture({ terminal: true });
    expect(await watchJob(fake.client, parseWatchArguments([JOB]), context)).toBe(0);
    const bar1 = '[######------------------] 1/4 25%';
    const bar2 = '[############------------] 2/4 50% "half"';
    expect(context.output().out).toBe(
      `1 job.admitted\n2 attempt.started\n\r\x1b[K${bar1}\r\x1b[K${bar2}\r\x1b[K3 job.succeeded\n${bar2}\njob ${JOB} ended SUCCEEDED, result {"count":4}\n`,
    );
  });

  it('formats the bar at its bounds and without a total', () => {
    const bar = (completedUnits: bigint, totalUnits: bigint, message = '') => formatProgressBar(create(ProgressSchema, { completedUnits, totalUnits, message }));
    expect(bar(0n, 3n)).toBe(`[${'-'.repeat(24)}] 0/3 0%`);
    expect(bar(3n, 3n)).toBe(`[${'#'.repeat(24)}] 3/3 100%`);
    expect(bar(9n, 3n)).toBe(`[${'#'.repeat(24)}] 9/3 100%`);
    expect(bar(7n, 0n, 'x')).toBe('progress 7 "x"');
  });

  it('with --json prints each frame and the ended job as proto3 JSON lines', async () => {
    const events = journal(CANCELLED_JOURNAL);
    const fake = fakeServices({ events, stream: [page(events.slice(0, 1)), progress(1n, 2n), page(events.slice(1))], current: job({ status: JobStatus.CANCELLED }) });
    const context = capture({ terminal: true });
    expect(await watchJob(fake.client, parseWatchArguments([JOB, '--json']), context)).toBe(4);
    const lines = context.output().out.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>);
    expect(lines.map((line) => Object.keys(line))).toEqual([['event'], ['progress'], ['event'], ['job']]);
    expect(lines[0]!['event']).toMatchObject({ jobId: JOB, sequence: '1', type: 'job.admitted', hash: events[0]!.hash });
    expect(lines[1]!['progress']).toMatchObject({ completedUnits: '1', totalUnits: '2' });
    expect(lines[3]!['job']).toMatchObject({ id: JOB, status: 'JOB_STATUS_CANCELLED' });
  });

  it('stops at a forged event with data_loss JOURNAL_CORRUPT and exit 1, printing nothing from it on', async () => {
    const events = journal(['job.admitted', 'attempt.started', 'job.succeeded']);
    events[1]!.payload = { step: 2, forged: true };
    const fake = fakeServices({ events, stream: [page(events.slice(0, 1)), progress(1n, 2n), page(events.slice(1))], current: job({ status: JobStatus.SUCCEEDED }) });
    const context = capture({ terminal: true });
    expect(await watchJob(fake.client, parseWatchArguments([JOB]), context)).toBe(1);
    const { out, err } = context.output();
    expect(out).toBe(`1 job.admitted\n\r\x1b[K[############------------] 1/2 50%\n`);
    expect(err).toMatch(/^docket watch: data_loss JOURNAL_CORRUPT: .*\n$/);
  });

  it('exits 1 when the stream ends but the job has not', async () => {
    const events = journal(['job.admitted']);
    const fake = fakeServices({ events, stream: [page(events)], current: job({ status: JobStatus.RUNNING }) });
    const context = capture();
    expect(await watchJob(fake.client, parseWatchArguments([JOB]), context)).toBe(1);
    expect(context.output().err).toBe(`docket watch: the stream ended but job ${JOB} is RUNNING, not ended\n`);
  });

  it('names the events service when it is the one not listening', () => {
    const unavailable = new ConnectError('connect ECONNREFUSED 127.0.0.1:9', Code.Unavailable);
    const wrapped = Object.assign(new Error('StreamJobEvents failed: Unavailable'), { name: 'DocketClientError', code: Code.Unavailable, reason: undefined, cause: unavailable });
    expect(describeClientFailure(wrapped, { name: 'events', url: 'http://127.0.0.1:9' })).toBe(
      'unavailable: connect ECONNREFUSED 127.0.0.1:9 (is the events service listening at http://127.0.0.1:9?)',
    );
    expect(describeClientFailure(wrapped, ADMISSION)).toContain('(is the admission service listening at http://127.0.0.1:7401?)');
  });
});
