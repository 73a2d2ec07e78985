import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import type { DocketServices } from './docket-services.js';
import { REPO_ROOT } from './service-process.js';

/*
 * The Python grpcio client check (test/python/docket_client_check.py): a
 * client in another language, with stubs generated from proto/, doing what
 * a user's does against a running Docket, and what it must see. Run
 * against one process of each service (test/python-client.test.ts) and
 * against replicas behind the front (test/replicas-behind-nginx.test.ts):
 * the same check, the same answers.
 */

const run = promisify(execFile);

/**
 * Debian's interpreter, not the first `python3` on PATH: python3-grpcio and
 * python3-protobuf are installed for it (see .ci/run).
 */
const PYTHON = '/usr/bin/python3';
/** Debian's protoc 3.21 (grpc_tools' bundled protoc 3.5 refuses proto3 `optional`). */
const PROTOC = '/usr/bin/protoc';
const GRPC_PYTHON_PLUGIN = '/usr/bin/grpc_python_plugin';
/** The public protos a Python client needs; google/protobuf comes with python3-protobuf. */
const PROTO_DIRS = ['docket/common/v1', 'docket/admission/v1', 'docket/execution/v1', 'docket/events/v1', 'google/rpc'];

/** Generates Python stubs from `proto/` into a fresh temp dir, the way examples/README.md says. */
export async function generatePythonStubs(): Promise<string> {
  const out = await mkdtemp(join(tmpdir(), 'docket-py-stubs-'));
  const protoRoot = join(REPO_ROOT, 'proto');
  const files: string[] = [];
  for (const dir of PROTO_DIRS) {
    for (const name of await readdir(join(protoRoot, dir))) if (name.endsWith('.proto')) files.push(`${dir}/${name}`);
  }
  await run(PROTOC, [
    `-I${protoRoot}`,
    '-I/usr/include',
    `--python_out=${out}`,
    `--grpc_python_out=${out}`,
    `--plugin=protoc-gen-grpc_python=${GRPC_PYTHON_PLUGIN}`,
    ...files,
  ]);
  return out;
}

/** host:port of a service URL, the target form grpcio expects. */
function targetOf(url: string): string {
  return new URL(url).host;
}

/** Removes what {@link generatePythonStubs} wrote. */
export async function removePythonStubs(stubs: string | undefined): Promise<void> {
  if (stubs) await rm(stubs, { recursive: true, force: true });
}

/**
 * Runs docket_client_check.py against `cluster`'s admission, execution and
 * events addresses with `stubs`, as subject `subject` on a fresh queue,
 * and checks everything it reports.
 */
export async function checkPythonClient(cluster: Pick<DocketServices, 'admission' | 'execution' | 'events' | 'tokenFor'>, stubs: string, subject: string): Promise<void> {
  const queue = `py-${Date.now().toString(36)}`;
  const { stdout } = await run(PYTHON, [join(REPO_ROOT, 'test/python/docket_client_check.py')], {
    cwd: REPO_ROOT,
    timeout: 30_000,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      PYTHONDONTWRITEBYTECODE: '1',
      DOCKET_PY_STUBS: stubs,
      DOCKET_ADMISSION: targetOf(cluster.admission.url),
      DOCKET_EXECUTION: targetOf(cluster.execution.url),
      DOCKET_EVENTS: targetOf(cluster.events.url),
      DOCKET_USER_TOKEN: await cluster.tokenFor(subject, 'user'),
      DOCKET_USER_SUBJECT: subject,
      DOCKET_WORKER_TOKEN: await cluster.tokenFor('py-worker', 'worker'),
      DOCKET_QUEUE: queue,
    },
  });
  const report = JSON.parse(stdout) as PythonReport;

  // Admission (SPEC section 3): one job, replayed unchanged, conflict decoded from the trailer.
  expect(report.submit).toMatchObject({ replayed: false, status: 'JOB_STATUS_QUEUED', has_expiry: true });
  expect(report.submit.job_id).toMatch(/^job_/);
  expect(report.replay).toEqual({ job_id: report.submit.job_id, replayed: true, same_response: true });
  expect(report.conflict).toEqual({
    code: 'ALREADY_EXISTS',
    error_info: { reason: 'IDEMPOTENCY_CONFLICT', domain: 'docket', status_code: 6 },
  });

  // SubmitJobs (SPEC section 14): the first item replays SubmitJob's job, a bad item fails alone with its
  // own status (field paths relative to the item), and a repeated key in one call is one job.
  const [replayed, admitted, bad, repeated] = report.submit_jobs;
  expect(replayed).toEqual({ job_id: report.submit.job_id, replayed: true });
  expect(admitted).toMatchObject({ replayed: false });
  expect(bad).toEqual({ code: 3, reason: 'INVALID_FIELD', fields: ['queue'] });
  expect(repeated).toEqual({ job_id: (admitted as { job_id: string }).job_id, replayed: true });

  // ListJobs: pages of 2 over 5 jobs, every job once, then no token.
  expect(report.list.ended).toBe(true);
  expect(report.list.pages.map((page) => page.length)).toEqual([2, 2, 1]);
  expect(report.list.pages.flat().sort()).toEqual(report.list.submitted);

  // The worker claimed the queued job at once (not after its 5 s wait) and succeeded.
  expect(report.worker).toMatchObject({
    incarnation_prefix: 'wkr_',
    claimed: [report.submit.job_id],
    input_matches: true,
    cancel_requested: false,
    outcome_status: 'JOB_STATUS_SUCCEEDED',
    result: { answer: 42, from: 'python' },
  });
  expect(report.worker.claim_seconds).toBeLessThan(4);

  // The worker session (ExecutionService/Work): the same work as calls on one stream, each answered by its
  // id; a stale fence is refused for that call alone with the unary error in a google.rpc.Status; the
  // stream ends OK after the half-close.
  expect(report.session).toEqual({
    job_id: report.session.job_id,
    claimed: [report.session.job_id],
    stale: { case: 'error', code: 9, reason: 'STALE_AUTHORITY' },
    progress: 'report_progress',
    outcome_status: 'JOB_STATUS_SUCCEEDED',
    result: { via: 'session' },
    order: [1, 2, 3, 4],
    ended: 'OK',
  });

  // SPEC section 2: Python's digest of the request equals the one the server bound.
  expect(report.digest.served).toMatch(/^[0-9a-f]{64}$/);
  expect(report.digest.computed).toBe(report.digest.served);

  // SPEC section 6: Python's own preimage and JCS recompute every hash.
  expect(report.journal).toMatchObject({
    chain_ok: true,
    chain_problem: null,
    first_previous_hash: '0'.repeat(64),
    wrong_digest_rejected: true,
  });
  expect(report.journal.types[0]).toBe('job.admitted');
  expect(report.journal.types).toContain('attempt.started');
  expect(report.journal.types.at(-1)).toBe('job.succeeded');
  const all = Array.from({ length: report.journal.latest_sequence }, (_, index) => index + 1);

  // The live stream got job.admitted as its backlog before the worker
  // started, then every later event live, each once, then end.
  expect(report.live_stream).toMatchObject({ error: null, chain_ok: true, equals_journal: true, sequences: all });
  expect(report.live_stream.frames?.[0]).toBe('page:1-1');
  expect(report.live_stream.frames?.at(-1)).toBe('end');

  // Resuming after sequence 2 continues at 3: no gap, no duplicate.
  expect(report.resume).toMatchObject({ chain_ok: true, equals_journal_tail: true, sequences: all.slice(2) });
  expect(report.resume.frames).toEqual([`page:3-${report.journal.latest_sequence}`, 'end']);

  // RFC 8785's own examples, for a quicker diagnosis when the digest or chain fails.
  expect(report.jcs_failures).toEqual([]);
  // RFC 8785's own examples, for a quicker diagnosis when the digest or chain fails.
  expect(report.jcs_failures).toEqual([]);
}

/** The JSON object docket_client_check.py prints. */
interface PythonReport {
  jcs_failures: unknown[];
  submit: { job_id: string; replayed: boolean; status: string; has_expiry: boolean };
  replay: { job_id: string; replayed: boolean; same_response: boolean };
  conflict: { code: string; error_info?: { reason: string; domain: string; status_code: number } | null };
  submit_jobs: ({ job_id: string; replayed: boolean } | { code: number; reason: string | null; fields: string[] })[];
  list: { submitted: string[]; pages: string[][]; ended: boolean };
  session: { job_id: string; [observation: string]: unknown };
  worker: {
    incarnation_prefix: string;
    claim_seconds: number;
    claimed: string[];
    input_matches?: boolean;
    cancel_requested?: boolean;
    outcome_status?: string;
    result?: Record<string, unknown>;
  };
  digest: { served: string; computed: string };
  journal: {
    latest_sequence: number;
    types: string[];
    chain_ok: boolean;
    chain_problem: string | null;
    head_hash: string;
    first_previous_hash: string | null;
    wrong_digest_rejected: boolean;
  };
  live_stream: {
    frames: string[] | null;
    sequences: number[] | null;
    error: string | null;
    chain_ok: boolean | null;
    equals_journal: boolean;
  };
  resume: { after: number; frames: string[]; sequences: number[]; chain_ok: boolean; equals_journal_tail: boolean };
}
