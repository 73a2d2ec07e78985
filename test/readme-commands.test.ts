import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_PORTS } from '@docket/cli';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { clientFor } from './support/clients.js';
import { REPO_ROOT } from './support/service-process.js';
import { describeShell, jsonValues, runShell, startShell, type ShellProcess, type ShellResult } from './support/shell.js';

/*
 * Project rule: every command README.md shows must work on a fresh clone
 * exactly as written. This file runs them.
 *
 * It parses README.md's ```sh blocks at run time, splits them into
 * commands (bash itself decides where a command ends: continuation lines
 * and the multi-line `change()` function are one command each), and sorts
 * every command into one of the KINDS below. A command no kind claims fails
 * the test, and so does a kind that no longer matches the README, so a new
 * command cannot land untested and a stale check cannot linger. The inline
 * `npx docket ...` spans of the prose are held to the same rule.
 *
 * Then it does what the README says, on the ports the README hard-codes
 * (7401/7402/7403: `docket dev`'s defaults, SPEC section 12; state takes
 * 7404), failing at once if any of them is taken:
 * `npm start` in a fresh temporary DOCKET_DATA_DIR (the README's `.docket/`,
 * moved out of the working tree), the token taken from the `export
 * DOCKET_TOKEN=...` line it prints, then every command in bash, exactly as
 * written, with DOCKET_TOKEN (and JOB, once the README exports it) in the
 * environment the way the README tells the reader to set them.
 *
 * The only rewriting of a README command is its placeholders
 * (`<id from the response>`, `<job id>`, `<job.id from the response>`),
 * replaced by a real job id from an earlier response. Two further commands
 * are derived because the README's prose asks for them: "change the input
 * and keep the key" (one field added to the SubmitJob input) and "submit
 * another with a new key" (the demo SubmitJob with another idempotencyKey).
 *
 * Not run here: `npm install`, `npm test` and `npm run verify` are what CI
 * runs around this very test (`.ci/run`: `npm ci`, ..., `npm test`, which
 * includes this file); running them from inside `npm test` would recurse.
 * The second `npm start` block is the same command as the first; the test
 * does run `npm start` a second time, to check that it keeps the data.
 */

/** The README's addresses, which are `docket dev`'s defaults. */
const ADMISSION_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.admission}`;
const EXECUTION_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.execution}`;
const EVENTS_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.events}`;

/** How long one `buf curl` / `curl` may take (they answer in well under a second). */
const CALL_TIMEOUT_MS = 20_000;
/** `npm start`: build (a no-op after `npm run build`), initdb, four services. */
const START_TIMEOUT_MS = 90_000;

// ---------------------------------------------------------------------------
// README parsing

/** One shell command of a ```sh block: its exact text and where it starts. */
interface ReadmeCommand {
  /** Exactly as written (continuation lines and all). */
  readonly text: string;
  /** 1-based line in README.md. */
  readonly line: number;
  /** `text` with continuation lines joined, for classification only. */
  readonly oneLine: string;
}

/** The ```sh blocks of `markdown`, as commands. Fails on a fence with another shell language. */
function readmeShellCommands(markdown: string): ReadmeCommand[] {
  const lines = markdown.split('\n');
  const commands: ReadmeCommand[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(.*)$/.exec(lines[i] ?? '');
    if (!fence) continue;
    const language = fence[1]?.trim() ?? '';
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end] ?? '')) end++;
    if (end >= lines.length) throw new Error(`README.md line ${i + 1}: unterminated code fence`);
    if (language === 'sh') commands.push(...splitCommands(lines.slice(start, end), start + 1));
    else if (/^(|bash|shell|console|zsh|terminal|shell-session)$/.test(language)) {
      throw new Error(
        `README.md line ${i + 1}: a \`\`\`${language} block; commands belong in \`\`\`sh blocks so that ` +
          'test/readme-commands.test.ts runs them (label output blocks `text`)',
      );
    }
    i = end;
  }
  return commands;
}

/**
 * Splits a block's lines into commands: a command is the shortest run of
 * lines, not ending in a continuation backslash, that bash parses as
 * complete (`bash -n`). Placeholders like
 * `<job id>` are masked for the syntax check only.
 */
function splitCommands(lines: readonly string[], firstLine: number): ReadmeCommand[] {
  const commands: ReadmeCommand[] = [];
  let pending: string[] = [];
  let startLine = 0;
  lines.forEach((line, index) => {
    if (pending.length === 0) {
      if (line.trim() === '') return;
      startLine = firstLine + index;
    }
    pending.push(line);
    if (line.endsWith('\\')) return; // a continuation line
    const text = pending.join('\n');
    const check = spawnSync('bash', ['-n', '-c', maskPlaceholders(text)], { encoding: 'utf8' });
    if (check.status === 0) {
      commands.push({ text, line: startLine, oneLine: text.replace(/\s*\\\n\s*/g, ' ').trim() });
      pending = [];
    } else if (!/unexpected end of file/.test(check.stderr)) {
      throw new Error(`README.md line ${startLine}: not valid bash:\n${text}\n${check.stderr}`);
    }
  });
  if (pending.length > 0) throw new Error(`README.md line ${startLine}: incomplete shell command:\n${pending.join('\n')}`);
  return commands;
}

/** The inline `npx docket ...` spans of the prose (outside code fences), whitespace collapsed. */
function readmeInlineDocketCommands(markdown: string): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, '');
  return [...prose.matchAll(/`([^`]+)`/g)]
    .map((match) => (match[1] ?? '').replace(/\s+/g, ' ').trim())
    .filter((span) => /^npx docket\b/.test(span));
}

/** The README's placeholders for a job id taken from an earlier response. */
const JOB_ID_PLACEHOLDERS = ['<id from the response>', '<job id>', '<job.id from the response>'];

function maskPlaceholders(text: string): string {
  return text.replace(/<[a-z][^<>\n]*>/gi, 'PLACEHOLDER');
}

/**
 * The one rewriting allowed: each job-id placeholder becomes `jobId`.
 * Fails on any other placeholder, so a new one needs a decision here.
 */
function withJobId(text: string, jobId: string): string {
  let result = text;
  for (const placeholder of JOB_ID_PLACEHOLDERS) result = result.split(placeholder).join(jobId);
  const unknown = /<[a-z][^<>\n]*>/i.exec(result);
  if (unknown) throw new Error(`unknown placeholder ${unknown[0]} in a README command: teach the test what to put there`);
  return result;
}

// ---------------------------------------------------------------------------
// Classification: every README command is exactly one of these

const ADMISSION = String.raw`http://127\.0\.0\.1:7401/docket\.admission\.v1\.AdmissionService`;
const EVENTS = String.raw`http://127\.0\.0\.1:7403/docket\.events\.v1\.EventService`;
const BUF_CURL = String.raw`npx buf curl --http2-prior-knowledge --protocol grpc`;
const BEARER = String.raw`-H "authorization: Bearer \$DOCKET_TOKEN"`;
/** `-d "{\"jobId\":\"$JOB\"}"`: the body names the job through JOB. */
const JOB_BODY = String.raw`-d "\{\\"jobId\\":\\"\$JOB\\"\}"`;

/** How the test checks each kind (see the `it`s below); `count` is how many README commands it expects. */
const KINDS = {
  /** CI runs it (`npm ci` in `.ci/run`) before this test can run at all. */
  npmInstall: { pattern: /^npm install$/ },
  /** beforeAll starts it; the last tests stop it with Ctrl-C and start it again. Shown twice. */
  npmStart: { pattern: /^npm start$/, count: 2 },
  /** CI runs it, and it runs this file: not run from here. */
  npmTest: { pattern: /^npm test$/ },
  submitOrder: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '\\{"idempotencyKey":"order-[^']*"queue":"email"[^']*' ${ADMISSION}/SubmitJob$`) },
  getJobById: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '[^']*<id from the response>[^']*' ${ADMISSION}/GetJob$`) },
  listJobs: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '\\{"pageSize":\\d+\\}' ${ADMISSION}/ListJobs$`) },
  listMethods: { pattern: new RegExp(`^${BUF_CURL} --list-methods http://127\\.0\\.0\\.1:7401$`) },
  curlListJobs: { pattern: new RegExp(`^curl -X POST -H "content-type: application/json" ${BEARER} -d '\\{"pageSize":\\d+\\}' ${ADMISSION}/ListJobs$`) },
  streamById: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '[^']*<job id>[^']*' ${EVENTS}/StreamJobEvents$`) },
  cancelById: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '\\{"idempotencyKey":"[^"]+","jobId":"<job id>"\\}' ${ADMISSION}/CancelJob$`) },
  worker: { pattern: /^npx docket worker(\s+#.*)?$/ },
  submitWatch: { pattern: /^npx docket submit --queue default --input '\{"count":\d+,"delay_ms":\d+\}' --watch$/ },
  submitDemo: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '\\{"idempotencyKey":"demo-count-[^']*"queue":"default"[^']*' ${ADMISSION}/SubmitJob$`) },
  submitApproval: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '\\{"idempotencyKey":"demo-approve-[^']*"queue":"default"[^']*"approve_at":3[^']*"effect":true[^']*' ${ADMISSION}/SubmitJob$`) },
  /** After each demo SubmitJob. */
  exportJob: { pattern: /^export JOB=<job\.id from the response>$/, count: 2 },
  approve: { pattern: /^npx docket approve \$JOB --comment "[^"]+"$/ },
  signalAdd: { pattern: /^npx docket signal \$JOB add --payload '\{"n":\d+\}'$/ },
  verify: { pattern: /^npx docket verify \$JOB$/ },
  getJobEnv: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} ${JOB_BODY} ${ADMISSION}/GetJob$`) },
  streamEnv: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} ${JOB_BODY} ${EVENTS}/StreamJobEvents$`) },
  changeFunction: { pattern: /^change\(\) \{\n[\s\S]*\n\}$/ },
  changePause: { pattern: /^change PauseJob(\s+#.*)?$/ },
  changeResume: { pattern: /^change ResumeJob(\s+#.*)?$/ },
  changeCancel: { pattern: /^change CancelJob(\s+#.*)?$/ },
} satisfies Record<string, { pattern: RegExp; count?: number }>;

type Kind = keyof typeof KINDS;

/** Inline `npx docket ...` spans of the prose. */
const INLINE_KINDS = {
  /** Run, and the token is checked against admission. */
  token: /^npx docket token --subject \S+ --role \S+$/,
  /** The same worker as the ```sh block, started in the background: that is how the test runs it. */
  workerInBackground: /^npx docket worker &$/,
  /** Run: it documents the exit codes the README refers to. */
  helpWatch: /^npx docket help watch$/,
  /** Run on a second approval demo job: it ends FAILED, class APPROVAL_DENIED. */
  deny: /^npx docket deny \$JOB$/,
} satisfies Record<string, RegExp>;

type Classified = Record<Kind, ReadmeCommand[]>;

function classify(commands: readonly ReadmeCommand[]): Classified {
  const classified = Object.fromEntries(Object.keys(KINDS).map((kind) => [kind, []])) as unknown as Classified;
  const problems: string[] = [];
  for (const command of commands) {
    const kinds = (Object.keys(KINDS) as Kind[]).filter((kind) => KINDS[kind].pattern.test(command.oneLine));
    if (kinds.length !== 1) {
      problems.push(
        `README.md line ${command.line}: ${kinds.length === 0 ? 'a command this test does not know how to check' : `matches ${kinds.join(', ')}`}:\n  ${command.text}`,
      );
      continue;
    }
    classified[kinds[0] as Kind].push(command);
  }
  for (const kind of Object.keys(KINDS) as Kind[]) {
    const expected = (KINDS[kind] as { count?: number }).count ?? 1;
    const found = classified[kind];
    if (found.length !== expected) problems.push(`kind ${kind}: expected ${expected} README command(s), found ${found.length}`);
    if (new Set(found.map((command) => command.text)).size > 1) problems.push(`kind ${kind}: its README commands differ`);
  }
  if (problems.length > 0) {
    throw new Error(`README.md and test/readme-commands.test.ts disagree; add a check for each new command:\n${problems.join('\n')}`);
  }
  return classified;
}

function classifyInline(spans: readonly string[]): Record<keyof typeof INLINE_KINDS, string> {
  const found: Partial<Record<keyof typeof INLINE_KINDS, string>> = {};
  for (const span of spans) {
    const kinds = (Object.keys(INLINE_KINDS) as (keyof typeof INLINE_KINDS)[]).filter((kind) => INLINE_KINDS[kind].test(span));
    if (kinds.length !== 1 || found[kinds[0]!] !== undefined) throw new Error(`README.md shows \`${span}\`, which this test does not know how to check`);
    found[kinds[0]!] = span;
  }
  for (const kind of Object.keys(INLINE_KINDS) as (keyof typeof INLINE_KINDS)[]) {
    if (found[kind] === undefined) throw new Error(`README.md no longer shows an inline command of kind ${kind}: update the test`);
  }
  return found as Record<keyof typeof INLINE_KINDS, string>;
}

// ---------------------------------------------------------------------------
// Running

let readme: Classified;
let inline: Record<keyof typeof INLINE_KINDS, string>;
let dataDir: string;
/** A fresh clone's shell: no DOCKET_* settings, no test-runner or npm-script variables. */
let baseEnv: NodeJS.ProcessEnv;
/** `npm start`, running. */
let system: ShellProcess | undefined;
/** `npx docket worker`, running in the background. */
let worker: ShellProcess | undefined;
/** The user token `npm start` printed. */
let token: string;
/** JOB, once the README's `export JOB=...` line has run. */
let job: string | undefined;
const started: ShellProcess[] = [];

function the(kind: Kind): ReadmeCommand {
  const command = readme[kind][0];
  if (!command) throw new Error(`no README command of kind ${kind}`);
  return command;
}

/** The environment the README's commands run in: DOCKET_TOKEN as the README says, and JOB once exported. */
function readerEnv(): NodeJS.ProcessEnv {
  return { ...baseEnv, DOCKET_TOKEN: token, ...(job === undefined ? {} : { JOB: job }) };
}

/** Runs `script` (a README command) in bash in the repository, as the reader would. */
async function run(script: string, timeoutMs = CALL_TIMEOUT_MS): Promise<ShellResult & { script: string }> {
  return { ...(await runShell(script, { cwd: REPO_ROOT, env: readerEnv(), timeoutMs })), script };
}

function start(script: string, env: NodeJS.ProcessEnv, timeoutMs: number): ShellProcess {
  const shell = startShell(script, { cwd: REPO_ROOT, env, timeoutMs });
  started.push(shell);
  return shell;
}

/** The one JSON message a successful `buf curl` / `curl` printed; fails with the output otherwise. */
function succeeded(result: ShellResult & { script: string }): Record<string, any> {
  if (result.code !== 0 || result.timedOut) throw new Error(`a README command failed:\n${describeShell(result)}`);
  const [message, ...more] = jsonValues(result.stdout);
  if (message === undefined || more.length > 0) throw new Error(`expected one JSON message:\n${describeShell(result)}`);
  return message as Record<string, any>;
}

/** The error `buf curl` printed (JSON on stderr), its google.rpc.ErrorInfo decoded. */
function refused(result: ShellResult & { script: string }): { code: string; message: string; reason: string | undefined } {
  if (result.code === 0 || result.timedOut) throw new Error(`expected the call to be refused:\n${describeShell(result)}`);
  const [error] = jsonValues(result.stderr) as { code?: string; message?: string; details?: { type: string; value: string; debug?: { reason?: string } }[] }[];
  if (error?.code === undefined) throw new Error(`no error JSON on stderr:\n${describeShell(result)}`);
  const info = error.details?.find((detail) => detail.type === 'google.rpc.ErrorInfo');
  // buf curl prints the detail base64-encoded (it cannot resolve
  // google.rpc.ErrorInfo through reflection); decode it as a client would.
  const reason = info?.debug?.reason ?? (info ? fromBinary(ErrorInfoSchema, Buffer.from(info.value, 'base64')).reason : undefined);
  return { code: error.code, message: error.message ?? '', reason };
}

/** The README's `GetJob` with `$JOB`, exactly as written; the job it shows. */
async function getJobEnv(): Promise<Record<string, any>> {
  return succeeded(await run(the('getJobEnv').text)).job as Record<string, any>;
}

/** Polls `probe` until it returns a value; fails after `timeoutMs` naming `what` and the last value seen. */
async function until<T>(probe: () => Promise<{ done: T | undefined; last: unknown }>, what: string, timeoutMs: number): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { done, last } = await probe();
    if (done !== undefined) return done;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Polls the README's GetJob until the job satisfies `wanted`. */
async function jobUntil(wanted: (job: Record<string, any>) => boolean, what: string, timeoutMs = 20_000): Promise<Record<string, any>> {
  return until(async () => {
    const seen = await getJobEnv();
    return { done: wanted(seen) ? seen : undefined, last: { status: seen.status, progress: seen.progress, attempts: seen.attemptCount } };
  }, what, timeoutMs);
}

/** The id of the job a SubmitJob response admitted. */
function admittedId(message: Record<string, any>): string {
  const id = message.job?.id;
  expect(id).toMatch(/^job_[a-z0-9]+$/);
  return id as string;
}

/** The `change()` function definition and one call of it, both exactly as the README writes them. */
function change(call: 'changePause' | 'changeResume' | 'changeCancel'): string {
  return `${the('changeFunction').text}\n${the(call).text}`;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function cleanEnvironment(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(DOCKET_|VITEST|npm_|NODE_ENV$|TEST$|INIT_CWD$)/i.test(key)) continue;
    env[key] = value;
  }
  env['DOCKET_DATA_DIR'] = dir;
  return env;
}

/** `npm start`, as the README runs it; resolves once it has printed the export line. */
async function npmStart(): Promise<ShellProcess> {
  const shell = start(the('npmStart').text, baseEnv, 10 * 60_000);
  await shell.waitFor(/all four services report SERVING/, '"all four services report SERVING" from npm start', START_TIMEOUT_MS);
  await shell.waitFor(/^\s*export DOCKET_TOKEN=\S+$/m, 'the export DOCKET_TOKEN line from npm start', 5_000);
  return shell;
}

/** Ctrl-C to `npm start`; checks that it stops everything and resolves with its output. */
async function stopSystem(shell: ShellProcess): Promise<ShellResult> {
  shell.interrupt();
  const exit = await Promise.race([
    shell.exited,
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 40_000)),
  ]);
  if (!exit) throw new Error(`npm start did not stop within 40 s of Ctrl-C:\n${describeShell(shell)}`);
  // npm re-raises a signal its script's shell died of, so after Ctrl-C npm
  // ends by SIGINT (a terminal shows status 130) even though `docket dev`
  // shut down cleanly; what tells a clean stop is the output.
  expect(exit.code === 0 || exit.signal === 'SIGINT', `npm start ended with ${exit.signal ?? exit.code}`).toBe(true);
  expect(exit.stdout).toContain('\nStopping ...\n');
  expect(exit.stdout).toMatch(/\nStopped\.\n$/);
  expect(exit.stderr).not.toMatch(/docket dev:/);
  // Ctrl-C once is an orderly stop; the second-Ctrl-C hint shows once.
  expect(exit.stderr.match(/Ctrl-C again/g) ?? []).toHaveLength(1);
  for (const port of Object.values(DEFAULT_SERVICE_PORTS)) expect(await portIsFree(port), `port ${port} still in use`).toBe(true);
  expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 'Postgres still running').toBe(false);
  return exit;
}

beforeAll(async () => {
  const markdown = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  readme = classify(readmeShellCommands(markdown));
  inline = classifyInline(readmeInlineDocketCommands(markdown));

  // The README's commands name ports 7401..7403; `docket dev` binds them
  // (and 7404) by default. Fail clearly rather than talk to someone else's system.
  for (const [name, port] of Object.entries(DEFAULT_SERVICE_PORTS)) {
    if (!(await portIsFree(port))) {
      throw new Error(
        `port ${port} (${name}) on 127.0.0.1 is in use: the README's commands hard-code docket dev's default ports, ` +
          'so this test needs them free; stop whatever holds it (another npm start?) and run it again',
      );
    }
  }
  dataDir = await mkdtemp(join(tmpdir(), 'docket-readme-'));
  baseEnv = cleanEnvironment(dataDir);
  system = await npmStart();
  const exported = /^\s*export DOCKET_TOKEN=(\S+)$/m.exec(system.stdout());
  token = exported?.[1] ?? '';
}, START_TIMEOUT_MS + 10_000);

afterAll(async () => {
  // Normally everything has stopped by now; this is for a failed run.
  for (const shell of started.reverse()) {
    if (shell.child.exitCode !== null || shell.child.signalCode !== null) continue;
    shell.interrupt();
    const exited = await Promise.race([shell.exited.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 20_000))]);
    if (!exited) {
      shell.interrupt(); // `docket dev`: a second Ctrl-C kills the services at once
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      shell.kill();
      await shell.exited;
    }
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe('README.md commands, run as written', () => {
  it('npm start: builds, starts the four services on loopback, prints their addresses, a user and a worker token', () => {
    const out = system!.stdout();
    expect(out).toMatch(/Docket is running: all four services report SERVING/);
    expect(out).toMatch(new RegExp(`^\\s+admission\\s+${ADMISSION_URL}\\s`, 'm'));
    expect(out).toMatch(new RegExp(`^\\s+execution\\s+${EXECUTION_URL}\\s`, 'm'));
    expect(out).toMatch(new RegExp(`^\\s+events\\s+${EVENTS_URL}\\s`, 'm'));
    expect(out).toMatch(/\(embedded, data in .*docket-readme-.*\/postgres\)/);
    expect(out).toMatch(/^\s+user\s+\(sub "dev"\)\s+ey\S+$/m);
    expect(out).toMatch(/^\s+worker\s+\(sub "dev-worker"\)\s+ey\S+$/m);
    expect(token).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  let orderId: string;

  it('SubmitJob admits the job; the same command again replays it; a changed input under the same key is refused', async () => {
    const first = succeeded(await run(the('submitOrder').text));
    orderId = admittedId(first);
    expect(first.job.status).toBe('JOB_STATUS_QUEUED');
    expect(first.replayed ?? false).toBe(false);

    // "Run the same command again: the response is identical, with "replayed": true."
    const again = succeeded(await run(the('submitOrder').text));
    expect(again.replayed).toBe(true);
    const { replayed: _replayed, ...rest } = again;
    expect(rest).toEqual(first);

    // "Change the input and keep the key: the answer is already_exists with
    // reason IDEMPOTENCY_CONFLICT." Derived: one field added to the input.
    const changedInput = the('submitOrder').text.replace('"input":{', '"input":{"changed":true,');
    expect(changedInput).not.toBe(the('submitOrder').text);
    const conflict = refused(await run(changedInput));
    expect(conflict.code).toBe('already_exists');
    expect(conflict.reason).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('GetJob shows the job; ListJobs (buf curl, and plain curl over HTTP/1.1) lists it; --list-methods lists the services', async () => {
    const got = succeeded(await run(withJobId(the('getJobById').text, orderId)));
    expect(got.job.id).toBe(orderId);
    expect(got.job.status).toBe('JOB_STATUS_QUEUED');

    const listed = succeeded(await run(the('listJobs').text));
    expect((listed.jobs as { id: string }[]).map((j) => j.id)).toContain(orderId);

    const overHttp1 = succeeded(await run(the('curlListJobs').text));
    expect((overHttp1.jobs as { id: string }[]).map((j) => j.id)).toContain(orderId);

    const methods = await run(the('listMethods').text);
    expect(methods.code, describeShell(methods)).toBe(0);
    const lines = methods.stdout.trim().split('\n');
    for (const method of AdmissionService.methods) expect(lines).toContain(`${AdmissionService.typeName}/${method.name}`);
    expect(lines).toContain('grpc.health.v1.Health/Check');
    expect(lines).toContain('grpc.reflection.v1.ServerReflection/ServerReflectionInfo');
    expect(lines).toContain('grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo');
  });

  it('StreamJobEvents prints the backlog; CancelJob from another terminal ends it with {"end":{}} and the stream closes', async () => {
    const stream = start(withJobId(the('streamById').text, orderId), readerEnv(), 30_000);
    await stream.waitFor((out) => jsonValues(out).length >= 1, 'the first StreamJobEvents frame', 10_000);
    const [backlog] = jsonValues(stream.stdout()) as Record<string, any>[];
    expect(backlog?.page?.events?.[0]).toMatchObject({ sequence: '1', type: 'job.admitted' });
    expect(stream.child.exitCode, 'the stream closed before the job ended').toBeNull();

    const cancelled = succeeded(await run(withJobId(the('cancelById').text, orderId)));
    expect(cancelled.job.status).toBe('JOB_STATUS_CANCELLED');

    const ended = await stream.exited;
    expect(ended.code, describeShell({ ...ended, script: stream.script })).toBe(0);
    const frames = checkedStream(ended.stdout);
    expect(frames.events.map((event) => event.type)).toEqual(['job.admitted', 'job.cancelled']);
  });

  it('npx docket token (inline) mints a token that admission accepts; npx docket help worker explains the options', async () => {
    const minted = await run(inline.token);
    expect(minted.code, describeShell(minted)).toBe(0);
    const jwt = minted.stdout.trim();
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    const [, subject, role] = /--subject (\S+) --role (\S+)/.exec(inline.token) ?? [];
    expect(claims).toMatchObject({ sub: subject, role });
    await clientFor(AdmissionService, ADMISSION_URL, jwt).listJobs({ pageSize: 1 });

    // The worker command's comment points there for its options.
    const see = /see (npx docket help \w+)/.exec(the('worker').text)?.[1];
    expect(see).toBeDefined();
    const help = await run(see!);
    expect(help.code, describeShell(help)).toBe(0);
    const named = /#\s*(.*): see/.exec(the('worker').text)?.[1]?.split(/,\s*/) ?? [];
    expect(named.length).toBeGreaterThan(0);
    for (const option of named) expect(help.stdout).toContain(option);
  });

  it('npx docket worker (in the background) registers with :7402 as demo-<host> on the default queue, four at a time', async () => {
    // `npx docket worker &` in the reader's second shell, where DOCKET_TOKEN
    // holds the user token (which the worker must not use).
    worker = start(the('worker').text, readerEnv(), 5 * 60_000);
    await worker.waitFor(/claiming from default/, 'the worker to start claiming', 30_000);
    const name = `demo-${hostname().replace(/[^A-Za-z0-9._:-]/g, '-')}`.slice(0, 128);
    expect(worker.stdout()).toMatch(new RegExp(`registered ${name.replace(/\./g, '\\.')} \\(.*\\) on default with concurrency 4`));
    expect(worker.stdout()).toContain(`worker ${name} claiming from default at ${EXECUTION_URL}`);
  });

  it('npx docket submit --watch runs a demo job with the worker and follows it to SUCCEEDED, exit 0', async () => {
    const watched = await run(the('submitWatch').text, 60_000);
    expect(watched.code, describeShell(watched)).toBe(0);
    const id = /^submitted (job_\w+) to default: QUEUED$/m.exec(watched.stdout)?.[1];
    expect(id, watched.stdout).toBeDefined();
    expect(watched.stdout).toMatch(/^1 job\.admitted$/m);
    expect(watched.stdout).toMatch(/^\d+ job\.succeeded$/m);
    expect(watched.stdout).toMatch(/^progress \d+\/10/m);
    expect(watched.stdout).toMatch(new RegExp(`^job ${id} ended SUCCEEDED`, 'm'));
    expect(watched.stderr).toMatch(/key/); // the generated idempotency key, to retry with
    const help = await run(inline.helpWatch);
    expect(help.code, describeShell(help)).toBe(0);
    expect(help.stdout).toMatch(/Exit status: 0 SUCCEEDED, 3 FAILED, 4 CANCELLED, 5 INTERRUPTED/);
  });

  let demoId: string;
  let demoStream: ShellProcess;

  it('the demo job runs: GetJob shows status, progress and checkpointPresent', async () => {
    const admitted = succeeded(await run(the('submitDemo').text));
    demoId = admittedId(admitted);
    expect(admitted.job.queue).toBe('default');

    // `export JOB=<job.id from the response>`, the placeholder replaced; the
    // trailing printenv is the test's, to read what the line exported.
    const exported = await run(`${withJobId(the('exportJob').text, demoId)}\nprintenv JOB`);
    expect(exported.code, describeShell(exported)).toBe(0);
    job = exported.stdout.trim();
    expect(job).toBe(demoId);

    const running = await jobUntil(
      (seen) => seen.status === 'JOB_STATUS_RUNNING' && seen.checkpointPresent === true && Number(seen.progress?.completedUnits) >= 6,
      'the demo job to run with progress and a checkpoint',
    );
    expect(running.progress).toMatchObject({ totalUnits: '20' });
    expect(worker!.stdout()).toContain(`claimed ${demoId} (attempt 1, fence 1)`);

    demoStream = start(the('streamEnv').text, readerEnv(), 60_000);
    await demoStream.waitFor((out) => jsonValues(out).length >= 1, 'the first frame of StreamJobEvents for $JOB', 10_000);
  });

  it('change PauseJob: the worker checkpoints and stops; the job is PAUSED', async () => {
    const paused = succeeded(await run(change('changePause')));
    expect(paused.job.id).toBe(demoId);
    expect(['JOB_STATUS_RUNNING', 'JOB_STATUS_PAUSED']).toContain(paused.job.status); // RUNNING (pause requested)
    const seen = await jobUntil((j) => j.status === 'JOB_STATUS_PAUSED', 'the job to be PAUSED');
    expect(seen.checkpointPresent).toBe(true);
    await worker!.waitFor(new RegExp(`${demoId} pause requested: checkpoint saved at \\d+/20`), 'the worker to report the pause checkpoint', 5_000);
  });

  it('change ResumeJob: QUEUED, then a new attempt with a higher fence continues from the checkpoint', async () => {
    const at = new RegExp(`${demoId} pause requested: checkpoint saved at (\\d+)/20`).exec(worker!.stdout())?.[1];
    expect(Number(at)).toBeGreaterThan(0);
    const resumed = succeeded(await run(change('changeResume')));
    expect(resumed.job.status).toBe('JOB_STATUS_QUEUED');
    await worker!.waitFor(new RegExp(`${demoId} resuming at ${at}/20 \\(attempt 2, fence 2\\)`), `the worker to print "resuming at ${at}/20"`, 15_000);
    await jobUntil((j) => j.status === 'JOB_STATUS_RUNNING' && j.attemptCount === 2, 'the job to run again (attempt 2)');
  });

  it('change CancelJob: CANCELLING, the handler stops, CANCELLED; StreamJobEvents ends after the terminal event', async () => {
    const cancelling = succeeded(await run(change('changeCancel')));
    expect(cancelling.job.status).toBe('JOB_STATUS_CANCELLING');
    await jobUntil((j) => j.status === 'JOB_STATUS_CANCELLED', 'the job to be CANCELLED');
    await worker!.waitFor(new RegExp(`${demoId} cancel requested: stopped at \\d+/20`), 'the worker to report the cancel', 5_000);
    await worker!.waitFor(new RegExp(`${demoId} cancelled -> CANCELLED`), 'the worker to report CANCELLED', 5_000);

    const ended = await demoStream.exited;
    expect(ended.code, describeShell({ ...ended, script: demoStream.script })).toBe(0);
    const frames = checkedStream(ended.stdout);
    const types = frames.events.map((event) => event.type);
    for (const type of ['attempt.started', 'checkpoint.saved', 'worker.demo_started']) expect(types).toContain(type);
    expect(types.at(-1)).toBe('job.cancelled');
    expect(frames.progress, 'live progress frames').toBeGreaterThan(0);
  });

  it('an approval demo job waits PAUSED; npx docket approve lets it go on; npx docket signal reaches it; it commits its effect; npx docket verify passes', async () => {
    const id = admittedId(succeeded(await run(the('submitApproval').text)));
    const exported = await run(`${withJobId(the('exportJob').text, id)}\nprintenv JOB`);
    job = exported.stdout.trim();
    expect(job).toBe(id);
    await worker!.waitFor(new RegExp(`${id} waiting for approval apr_`), 'the worker to ask for approval', 15_000);
    const paused = await jobUntil((j) => j.status === 'JOB_STATUS_PAUSED' && j.pendingApproval !== undefined, 'the job to wait for approval');
    expect(paused.pendingApproval.details).toMatchObject({ at: 3 });

    const approved = await run(the('approve').text);
    expect(approved.code, describeShell(approved)).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`allowed ${paused.pendingApproval.approvalId} of ${id}`));
    await worker!.waitFor(new RegExp(`${id} approved: continuing from 3/20`), 'the next attempt to continue after the approval', 15_000);

    const signalled = await run(the('signalAdd').text);
    expect(signalled.code, describeShell(signalled)).toBe(0);
    expect(signalled.stdout).toMatch(new RegExp(`signal 1 "add" to ${id}`));
    await worker!.waitFor(new RegExp(`${id} signal 1 add`), 'the worker to take the signal', 15_000);

    const done = await jobUntil((j) => j.status === 'JOB_STATUS_SUCCEEDED', 'the approved job to succeed', 30_000);
    expect(done.result).toMatchObject({ counted: 20 });
    expect(typeof done.result.external_id).toBe('string');
    const verified = await run(the('verify').text);
    expect(verified.code, describeShell(verified)).toBe(0);
    expect(verified.stdout).toMatch(new RegExp(`^intact: ${id}, \\d+ events`));
  });

  it('npx docket deny (inline) fails a job that waits for approval with class APPROVAL_DENIED', async () => {
    const anotherKey = the('submitApproval').text.replace(/"idempotencyKey":"[^"]+"/, '"idempotencyKey":"demo-approve-0002"');
    expect(anotherKey).not.toBe(the('submitApproval').text);
    job = admittedId(succeeded(await run(anotherKey)));
    await jobUntil((j) => j.status === 'JOB_STATUS_PAUSED' && j.pendingApproval !== undefined, 'the second approval job to wait');
    const denied = await run(inline.deny);
    expect(denied.code, describeShell(denied)).toBe(0);
    const failed = await getJobEnv();
    expect([failed.status, failed.failure?.failureClass]).toEqual(['JOB_STATUS_FAILED', 'FAILURE_CLASS_APPROVAL_DENIED']);
  });

  let succeededId: string;

  it('a demo job submitted with a new key runs to SUCCEEDED; Ctrl-C drains the worker while it runs', async () => {
    // "submit another with a new key": the README's demo SubmitJob with
    // another idempotencyKey.
    const anotherKey = the('submitDemo').text.replace(/"idempotencyKey":"[^"]+"/, '"idempotencyKey":"demo-count-to-twenty-0002"');
    expect(anotherKey).not.toBe(the('submitDemo').text);
    succeededId = admittedId(succeeded(await run(anotherKey)));
    const exported = await run(`${withJobId(the('exportJob').text, succeededId)}\nprintenv JOB`);
    job = exported.stdout.trim();
    expect(job).toBe(succeededId);

    await worker!.waitFor(new RegExp(`claimed ${succeededId} `), 'the worker to claim the second demo job', 15_000);
    await jobUntil((j) => j.status === 'JOB_STATUS_RUNNING' && Number(j.progress?.completedUnits) >= 1, 'the second job to make progress');

    // Ctrl-C in the worker's terminal: no new claims, the running job finishes, then it exits.
    worker!.interrupt();
    await worker!.waitFor(/draining/, 'the worker to drain', 5_000);
    const stopped = await worker!.exited;
    expect(stopped.code === 0 || stopped.signal === 'SIGINT' || stopped.code === 130, describeShell({ ...stopped, script: worker!.script })).toBe(true);
    expect(stopped.stdout).toContain(`${succeededId} succeeded -> SUCCEEDED`);
    expect(stopped.stdout).toMatch(/stopped \(drained\)\n$/);
    expect(`${stopped.stdout}${stopped.stderr}`.match(/SIGINT: draining/g) ?? [], 'a single Ctrl-C reaches the worker once').toHaveLength(1);

    const done = await getJobEnv();
    expect(done.status).toBe('JOB_STATUS_SUCCEEDED');
    expect(done.result).toEqual({ counted: 20, resumed_from: 0 });

    // StreamJobEvents on a finished job: the whole journal, then end.
    const streamed = await run(the('streamEnv').text);
    expect(streamed.code, describeShell(streamed)).toBe(0);
    expect(checkedStream(streamed.stdout).events.at(-1)?.type).toBe('job.succeeded');
  });

  it('change CancelJob on the ended job: failed_precondition, ILLEGAL_TRANSITION, "a SUCCEEDED job cannot become CANCELLED"', async () => {
    const refusal = refused(await run(change('changeCancel')));
    expect(refusal).toEqual({
      code: 'failed_precondition',
      reason: 'ILLEGAL_TRANSITION',
      message: 'a SUCCEEDED job cannot become CANCELLED',
    });
  });

  it('Ctrl-C stops npm start cleanly; the next npm start keeps the data', async () => {
    await stopSystem(system!);
    system = await npmStart();
    expect(system.stdout()).toMatch(/Postgres is up on port \d+ \(existing cluster/);
    // The token from the first run is still valid (secrets.json is kept), and the jobs are still there.
    const got = succeeded(await run(withJobId(the('getJobById').text, orderId)));
    expect(got.job.status).toBe('JOB_STATUS_CANCELLED');
    expect((await getJobEnv()).status).toBe('JOB_STATUS_SUCCEEDED');
    await stopSystem(system);
  }, START_TIMEOUT_MS + 60_000);
});

/** An event as `buf curl` prints it. */
interface PrintedEvent {
  readonly sequence: string;
  readonly type: string;
  readonly previousHash: string;
  readonly hash: string;
}

/**
 * Checks what the README says of a StreamJobEvents output: a backlog page
 * first, events in sequence from 1 with no gap or duplicate, each with its
 * previousHash (chained to the one before) and hash, only page / progress /
 * heartbeat frames in between, and `{"end":{}}` last.
 */
function checkedStream(stdout: string): { events: PrintedEvent[]; progress: number } {
  const frames = jsonValues(stdout) as Record<string, any>[];
  expect(frames[0]?.page, 'the first frame is the backlog page').toBeDefined();
  expect(frames.at(-1)).toEqual({ end: {} });
  const events: PrintedEvent[] = [];
  let progress = 0;
  for (const frame of frames.slice(0, -1)) {
    const [key, ...others] = Object.keys(frame);
    expect(others).toEqual([]);
    if (key === 'page') events.push(...(frame.page.events as PrintedEvent[]));
    else if (key === 'progress') progress++;
    else expect(key).toBe('heartbeat');
  }
  events.forEach((event, index) => {
    expect(event.sequence).toBe(String(index + 1));
    expect(event.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(event.previousHash).toBe(index === 0 ? '0'.repeat(64) : events[index - 1]?.hash);
  });
  return { events, progress };
}
