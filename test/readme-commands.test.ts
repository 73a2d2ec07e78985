import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONSOLE_PORT, DEFAULT_SERVICE_PORTS } from '@docket/cli';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
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
 * The only rewriting of a README command is its placeholder
 * (`<job id it printed>`), replaced by the job id an earlier command
 * printed. One further command is derived because the README's prose asks
 * for it: "change the input and keep the key" (one field added to the
 * submit's input). Between commands the test reads jobs through its own
 * GetJob client, to wait for the states the README describes.
 *
 * Not run here: `npm install`, `npm test` and `npm run verify` are what CI
 * runs around this very test (`.ci/run`: `npm ci`, ..., `npm test`, which
 * includes this file); running them from inside `npm test` would recurse.
 * The test does run `npm start` a second time, to check that it keeps the
 * data.
 */

/** The README's addresses, which are `docket dev`'s defaults. */
const ADMISSION_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.admission}`;
const EXECUTION_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.execution}`;
const EVENTS_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.events}`;
/** The web console `npm start` serves (the README names it in prose). */
const CONSOLE_URL = `http://127.0.0.1:${DEFAULT_CONSOLE_PORT}`;
/** Every port `npm start` binds by default. */
const DEV_PORTS: Readonly<Record<string, number>> = { ...DEFAULT_SERVICE_PORTS, console: DEFAULT_CONSOLE_PORT };

/** How long one README command may take (they answer in well under a second). */
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
const JOB_ID_PLACEHOLDERS = ['<job id it printed>'];

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
const BUF_CURL = String.raw`npx buf curl --http2-prior-knowledge --protocol grpc`;
const BEARER = String.raw`-H "authorization: Bearer \$DOCKET_TOKEN"`;

/** How the test checks each kind (see the `it`s below); `count` is how many README commands it expects. */
const KINDS = {
  /** CI runs it (`npm ci` in `.ci/run`) before this test can run at all. */
  npmInstall: { pattern: /^npm install$/ },
  /** beforeAll starts it; the last test stops it with Ctrl-C and starts it again. */
  npmStart: { pattern: /^npm start$/ },
  /** CI runs it, and it runs this file: not run from here. */
  npmTest: { pattern: /^npm test$/ },
  worker: { pattern: /^npx docket worker(\s+#.*)?$/ },
  submitWatch: { pattern: /^npx docket submit --queue default --input '\{"count":\d+,"delay_ms":\d+\}' --watch$/ },
  submitOrder: { pattern: /^npx docket submit --queue email --input '\{[^']*\}' --key order-[\w-]+$/ },
  /** After each CLI submit whose job the README goes on with. */
  exportJob: { pattern: /^export JOB=<job id it printed>$/, count: 3 },
  getJob: { pattern: /^npx docket get \$JOB$/ },
  listQueue: { pattern: /^npx docket list --queue email$/ },
  watchJob: { pattern: /^npx docket watch \$JOB$/ },
  /** The email job waiting in QUEUED. */
  cancelQueued: { pattern: /^npx docket cancel \$JOB$/ },
  /** The running demo job (its comment says what happens). */
  cancelRunning: { pattern: /^npx docket cancel \$JOB\s+#.*$/ },
  submitDemo: { pattern: /^npx docket submit --queue default --input '\{"count":20,"delay_ms":\d+\}'$/ },
  pauseJob: { pattern: /^npx docket pause \$JOB(\s+#.*)?$/ },
  resumeJob: { pattern: /^npx docket resume \$JOB(\s+#.*)?$/ },
  sdkExample: { pattern: /^node examples\/typescript\/submit-and-watch\.mjs$/ },
  bufSubmit: { pattern: new RegExp(`^${BUF_CURL} ${BEARER} -d '\\{"idempotencyKey":"order-[^']*"queue":"email"[^']*' ${ADMISSION}/SubmitJob$`) },
  listMethods: { pattern: new RegExp(`^${BUF_CURL} --list-methods http://127\\.0\\.0\\.1:7401$`) },
  curlListJobs: { pattern: new RegExp(`^curl -X POST -H "content-type: application/json" ${BEARER} -d '\\{"pageSize":\\d+\\}' ${ADMISSION}/ListJobs$`) },
  submitApproval: { pattern: /^npx docket submit --queue default --input '\{"count":20,"delay_ms":500,"approve_at":3,"effect":true\}'$/ },
  approve: { pattern: /^npx docket approve \$JOB --comment "[^"]+"$/ },
  signalAdd: { pattern: /^npx docket signal \$JOB add --payload '\{"n":\d+\}'$/ },
  verify: { pattern: /^npx docket verify \$JOB$/ },
} satisfies Record<string, { pattern: RegExp; count?: number }>;

type Kind = keyof typeof KINDS;

/** Inline `npx docket ...` spans of the prose. */
const INLINE_KINDS = {
  /** Run, and the token is checked against admission. */
  token: /^npx docket token --subject \S+ --role \S+$/,
  /** Run: it documents the exit codes the README refers to. */
  helpWatch: /^npx docket help watch$/,
  /** The same command as the ```sh block: run on the demo job from "another terminal". */
  watchDemo: /^npx docket watch \$JOB$/,
  /** Run on the approval job: it shows the pending approval. */
  getApproval: /^npx docket get \$JOB$/,
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

/** The standard output of a README `docket` command that exited 0; fails with its output otherwise. */
function printed(result: ShellResult & { script: string }): string {
  if (result.code !== 0 || result.timedOut) throw new Error(`a README command failed:\n${describeShell(result)}`);
  return result.stdout;
}

/** The id a `docket submit` printed: `submitted job_... to <queue>: QUEUED`. */
function submittedId(stdout: string): string {
  const id = /^submitted (job_[a-z0-9]+) to [\w.-]+: QUEUED$/m.exec(stdout)?.[1];
  if (id === undefined) throw new Error(`docket submit printed no "submitted" line:\n${stdout}`);
  return id;
}

/** Runs the README's `export JOB=<job id it printed>` with `id` in the placeholder; from then on JOB is `id`. */
async function exportJob(id: string): Promise<void> {
  // The trailing printenv is the test's, to read what the line exported.
  const exported = await run(`${withJobId(the('exportJob').text, id)}\nprintenv JOB`);
  expect(exported.code, describeShell(exported)).toBe(0);
  job = exported.stdout.trim();
  expect(job).toBe(id);
}

/** The job as the test itself reads it (GetJob through its own client, not a README command). */
async function jobNow(id: string): Promise<Job> {
  const { job: found } = await clientFor(AdmissionService, ADMISSION_URL, token).getJob({ jobId: id });
  if (!found) throw new Error(`GetJob answered ${id} without a job`);
  return found;
}

/** Polls GetJob until the job satisfies `wanted`; fails after `timeoutMs` with the last state seen. */
async function jobUntil(id: string, wanted: (job: Job) => boolean, what: string, timeoutMs = 20_000): Promise<Job> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const seen = await jobNow(id);
    if (wanted(seen)) return seen;
    if (performance.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; last seen: ${JobStatus[seen.status]}, progress ${seen.progress?.completedUnits}, attempts ${seen.attemptCount}`);
    }
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
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
    // Real time: a timeout race, the bound on an orderly stop.
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
  for (const port of Object.values(DEV_PORTS)) expect(await portIsFree(port), `port ${port} still in use`).toBe(true);
  expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid')), 'Postgres still running').toBe(false);
  return exit;
}

beforeAll(async () => {
  const markdown = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  readme = classify(readmeShellCommands(markdown));
  inline = classifyInline(readmeInlineDocketCommands(markdown));

  // The README's commands name ports 7401..7403; `docket dev` binds them
  // (and 7404) by default. Fail clearly rather than talk to someone else's system.
  for (const [name, port] of Object.entries(DEV_PORTS)) {
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
    // Real time: a timeout race, the bound on an orderly stop.
    const exited = await Promise.race([shell.exited.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 20_000))]);
    if (!exited) {
      shell.interrupt(); // `docket dev`: a second Ctrl-C kills the services at once
      // Real time: a timeout race, the grace it has to do so before it is killed.
      const killedItsServices = await Promise.race([shell.exited.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 2_000))]);
      if (!killedItsServices) shell.kill();
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

  it('npm start serves the web console on :7405, whose origin admission and events allow, and the printed user token signs in from it', async () => {
    expect(system!.stdout()).toMatch(new RegExp(`^\\s+console\\s+${CONSOLE_URL}\\s`, 'm'));
    expect(await (await fetch(`${CONSOLE_URL}/`)).text()).toContain('<title>Docket console</title>');
    expect(await (await fetch(`${CONSOLE_URL}/config.json`)).json()).toEqual({ admissionUrl: ADMISSION_URL, eventsUrl: EVENTS_URL });
    for (const url of [`${ADMISSION_URL}/docket.admission.v1.AdmissionService/ListJobs`, `${EVENTS_URL}/docket.events.v1.EventService/WatchJobs`]) {
      const preflight = await fetch(url, {
        method: 'OPTIONS',
        headers: { origin: CONSOLE_URL, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-grpc-web' },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe(CONSOLE_URL);
    }
    // What the sign-in form does with the pasted token: one ListJobs, cross-origin.
    const listed = await fetch(`${ADMISSION_URL}/docket.admission.v1.AdmissionService/ListJobs`, {
      method: 'POST',
      headers: { origin: CONSOLE_URL, 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: '{"pageSize":1}',
    });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('access-control-allow-origin')).toBe(CONSOLE_URL);
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
    expect(see).toBe('npx docket help worker');
    const help = await run(see!);
    expect(help.code, describeShell(help)).toBe(0);
    const named = /#\s*(.*): see/.exec(the('worker').text)?.[1]?.split(/,\s*/) ?? [];
    expect(named).toEqual(['--queue', '--concurrency', '--name', '--url']);
    for (const option of named) expect(help.stdout).toContain(option);
  });

  it('npx docket worker (in a second terminal) registers with :7402 as demo-<host> on the default queue, four at a time', async () => {
    // Started in the background, with DOCKET_TOKEN holding the user token
    // (which the worker must not use).
    worker = start(the('worker').text, readerEnv(), 5 * 60_000);
    await worker.waitFor(/claiming from default/, 'the worker to start claiming', 30_000);
    const name = `demo-${hostname().replace(/[^A-Za-z0-9._:-]/g, '-')}`.slice(0, 128);
    expect(worker.stdout()).toMatch(new RegExp(`registered ${name.replace(/\./g, '\\.')} \\(.*\\) on default with concurrency 4`));
    expect(worker.stdout()).toContain(`worker ${name} claiming from default at ${EXECUTION_URL}`);
  });

  it('npx docket submit --watch (in a third) runs a demo job with the worker and follows it to SUCCEEDED, exit 0', async () => {
    const watched = await run(the('submitWatch').text, 60_000);
    expect(watched.code, describeShell(watched)).toBe(0);
    const id = submittedId(watched.stdout);
    expect(watched.stdout).toMatch(/^1 job\.admitted$/m);
    expect(watched.stdout).toMatch(/^\d+ job\.succeeded$/m);
    expect(watched.stdout).toMatch(/^progress \d+\/10/m);
    expect(watched.stdout).toMatch(new RegExp(`^job ${id} ended SUCCEEDED`, 'm'));
    expect(watched.stderr).toMatch(/idempotency key cli-/); // the generated key, to retry with
    const help = await run(inline.helpWatch);
    expect(help.code, describeShell(help)).toBe(0);
    expect(help.stdout).toMatch(/Exit status: 0 SUCCEEDED, 3 FAILED, 4 CANCELLED, 5 INTERRUPTED/);
  });

  it('examples/typescript/submit-and-watch.mjs submits with the SDK and follows the job to SUCCEEDED', async () => {
    const ran = await run(the('sdkExample').text, 60_000);
    const out = printed(ran);
    const id = /^submitted (job_[a-z0-9]+) with key \S+$/m.exec(out)?.[1];
    expect(id, out).toBeDefined();
    const sequences = [...out.matchAll(/^(\d+) ([a-z_.]+)$/gm)].map((match) => Number(match[1]));
    expect(sequences[0]).toBe(1);
    expect(sequences).toEqual(sequences.map((_, index) => index + 1)); // in order, no gap, no duplicate
    expect(out).toMatch(/^\d+ job\.succeeded$/m);
    expect(out).toMatch(/^progress 5\/5$/m);
    expect(out).toMatch(new RegExp(`^${id} ended SUCCEEDED$`, 'm'));
  });

  let orderId: string;

  it('docket submit --key admits the job; the same command again replays it; a changed input under the same key is refused', async () => {
    orderId = submittedId(printed(await run(the('submitOrder').text)));
    const again = printed(await run(the('submitOrder').text));
    expect(again).toMatch(new RegExp(`^replayed ${orderId} to email: QUEUED`, 'm'));

    // "Change the input and keep the key": one field added to the input.
    const changedInput = the('submitOrder').text.replace(`--input '{`, `--input '{"changed":true,`);
    expect(changedInput).not.toBe(the('submitOrder').text);
    const conflict = await run(changedInput);
    expect(conflict.code, describeShell(conflict)).toBe(1);
    expect(conflict.stderr).toMatch(/already_exists IDEMPOTENCY_CONFLICT/);
    expect((await jobNow(orderId)).input).toEqual({ to: 'ada@example.com' });
  });

  it('docket get shows the job; docket list --queue email lists it', async () => {
    await exportJob(orderId);
    const got = printed(await run(the('getJob').text));
    expect(got).toMatch(new RegExp(`^job ${orderId}: QUEUED$`, 'm'));
    expect(got).toMatch(/^\s+queue:\s+email$/m);
    const listed = printed(await run(the('listQueue').text));
    expect(listed.split('\n')[0]).toMatch(/^ID\s+STATUS\s+QUEUE\s+ATTEMPTS\s+UPDATED$/);
    expect(listed).toMatch(new RegExp(`^${orderId}\\s+QUEUED\\s+email\\s`, 'm'));
  });

  it('docket watch follows the waiting job; docket cancel from another terminal ends the watch with CANCELLED, exit 4', async () => {
    const watch = start(the('watchJob').text, readerEnv(), 30_000);
    await watch.waitFor(/^1 job\.admitted$/m, 'the watch to print the journal', 15_000);
    expect(watch.child.exitCode, 'the watch ended before the job did').toBeNull();
    const cancelled = printed(await run(the('cancelQueued').text));
    expect(cancelled).toMatch(new RegExp(`^cancelled ${orderId}: the job is CANCELLED$`, 'm'));
    const ended = await watch.exited;
    expect(ended.code, describeShell({ ...ended, script: watch.script })).toBe(4);
    expect(ended.stdout).toMatch(/^2 job\.cancelled$/m);
    expect(ended.stdout).toMatch(new RegExp(`^job ${orderId} ended CANCELLED`, 'm'));
  });

  let demoId: string;
  let demoWatch: ShellProcess;

  it('the demo job runs with progress and a checkpoint; docket watch in another terminal follows it', async () => {
    demoId = submittedId(printed(await run(the('submitDemo').text)));
    await exportJob(demoId);
    demoWatch = start(inline.watchDemo, readerEnv(), 60_000);
    const running = await jobUntil(
      demoId,
      (seen) => seen.status === JobStatus.RUNNING && seen.checkpointPresent && Number(seen.progress?.completedUnits) >= 6,
      'the demo job to run with progress and a checkpoint',
    );
    expect(running.progress?.totalUnits).toBe(20n);
    expect(worker!.stdout()).toContain(`claimed ${demoId} (attempt 1, fence 1)`);
  });

  it('docket pause: the worker checkpoints and stops; the job is PAUSED', async () => {
    const paused = printed(await run(the('pauseJob').text));
    expect(paused).toMatch(new RegExp(`^paused ${demoId}: the job is (RUNNING|PAUSED)$`, 'm')); // RUNNING (pause requested)
    const seen = await jobUntil(demoId, (j) => j.status === JobStatus.PAUSED, 'the job to be PAUSED');
    expect(seen.checkpointPresent).toBe(true);
    await worker!.waitFor(new RegExp(`${demoId} pause requested: checkpoint saved at \\d+/20`), 'the worker to report the pause checkpoint', 5_000);
  });

  it('docket resume: QUEUED, then a new attempt with a higher fence continues from the checkpoint', async () => {
    const at = new RegExp(`${demoId} pause requested: checkpoint saved at (\\d+)/20`).exec(worker!.stdout())?.[1];
    expect(Number(at)).toBeGreaterThan(0);
    const resumed = printed(await run(the('resumeJob').text));
    expect(resumed).toMatch(new RegExp(`^resumed ${demoId}: the job is QUEUED$`, 'm'));
    await worker!.waitFor(new RegExp(`${demoId} resuming at ${at}/20 \\(attempt 2, fence 2\\)`), `the worker to print "resuming at ${at}/20"`, 15_000);
    await jobUntil(demoId, (j) => j.status === JobStatus.RUNNING && j.attemptCount === 2, 'the job to run again (attempt 2)');
  });

  it('docket cancel of the running job: CANCELLING, the handler stops, CANCELLED; the watch shows the whole journal and exits 4', async () => {
    const cancelling = printed(await run(the('cancelRunning').text));
    expect(cancelling).toMatch(new RegExp(`^cancelled ${demoId}: the job is CANCELLING$`, 'm'));
    await jobUntil(demoId, (j) => j.status === JobStatus.CANCELLED, 'the job to be CANCELLED');
    await worker!.waitFor(new RegExp(`${demoId} cancel requested: stopped at \\d+/20`), 'the worker to report the cancel', 5_000);
    await worker!.waitFor(new RegExp(`${demoId} cancelled -> CANCELLED`), 'the worker to report CANCELLED', 5_000);

    const ended = await demoWatch.exited;
    expect(ended.code, describeShell({ ...ended, script: demoWatch.script })).toBe(4);
    const types = [...ended.stdout.matchAll(/^\d+ ([a-z_.]+)$/gm)].map((match) => match[1]);
    for (const type of ['job.admitted', 'attempt.started', 'checkpoint.saved', 'worker.demo_started', 'job.paused', 'job.resumed']) expect(types).toContain(type);
    expect(types.at(-1)).toBe('job.cancelled');
    expect(ended.stdout, 'live progress').toMatch(/^progress \d+\/20/m);
    expect(ended.stdout).toMatch(new RegExp(`^job ${demoId} ended CANCELLED`, 'm'));
  });

  it('an approval demo job waits PAUSED; docket get shows the approval; docket approve lets it go on; docket signal reaches it; it commits its effect; docket verify passes', async () => {
    const id = submittedId(printed(await run(the('submitApproval').text)));
    await exportJob(id);
    await worker!.waitFor(new RegExp(`${id} waiting for approval apr_`), 'the worker to ask for approval', 15_000);
    const paused = await jobUntil(id, (j) => j.status === JobStatus.PAUSED && j.pendingApproval !== undefined, 'the job to wait for approval');
    const approvalId = paused.pendingApproval!.approvalId;
    expect(printed(await run(inline.getApproval))).toMatch(new RegExp(`^\\s+approval:\\s+${approvalId}\\b`, 'm'));

    const approved = printed(await run(the('approve').text));
    expect(approved).toMatch(new RegExp(`allowed ${approvalId} of ${id}`));
    await worker!.waitFor(new RegExp(`${id} approved: continuing from 3/20`), 'the next attempt to continue after the approval', 15_000);

    const signalled = printed(await run(the('signalAdd').text));
    expect(signalled).toMatch(new RegExp(`signal 1 "add" to ${id}`));
    await worker!.waitFor(new RegExp(`${id} signal 1 add`), 'the worker to take the signal', 15_000);

    const done = await jobUntil(id, (j) => j.status === JobStatus.SUCCEEDED, 'the approved job to succeed', 30_000);
    expect(done.result).toMatchObject({ counted: 20 });
    expect(typeof done.result?.external_id).toBe('string');
    const verified = printed(await run(the('verify').text));
    expect(verified).toMatch(new RegExp(`^intact: ${id}, \\d+ events`));
  });

  it('npx docket deny (inline) fails a job that waits for approval with class APPROVAL_DENIED', async () => {
    // The same submit again: the CLI makes a new key, so it is a new job.
    const id = submittedId(printed(await run(the('submitApproval').text)));
    await exportJob(id);
    await jobUntil(id, (j) => j.status === JobStatus.PAUSED && j.pendingApproval !== undefined, 'the second approval job to wait');
    const denied = await run(inline.deny);
    expect(denied.code, describeShell(denied)).toBe(0);
    const failed = await jobNow(id);
    expect([failed.status, failed.failure?.failureClass]).toEqual([JobStatus.FAILED, FailureClass.APPROVAL_DENIED]);
  });

  let succeededId: string;

  it('another demo job runs to SUCCEEDED; Ctrl-C drains the worker while it runs; cancelling the ended job is ILLEGAL_TRANSITION', async () => {
    // "submit another": the demo submit again (a new key, a new job).
    succeededId = submittedId(printed(await run(the('submitDemo').text)));
    await exportJob(succeededId);
    await worker!.waitFor(new RegExp(`claimed ${succeededId} `), 'the worker to claim the second demo job', 15_000);
    await jobUntil(succeededId, (j) => j.status === JobStatus.RUNNING && Number(j.progress?.completedUnits) >= 1, 'the second job to make progress');

    // Ctrl-C in the worker's terminal: no new claims, the running job finishes, then it exits.
    worker!.interrupt();
    await worker!.waitFor(/draining/, 'the worker to drain', 5_000);
    const stopped = await worker!.exited;
    expect(stopped.code === 0 || stopped.signal === 'SIGINT' || stopped.code === 130, describeShell({ ...stopped, script: worker!.script })).toBe(true);
    expect(stopped.stdout).toContain(`${succeededId} succeeded -> SUCCEEDED`);
    expect(stopped.stdout).toMatch(/stopped \(drained\)\n$/);
    expect(`${stopped.stdout}${stopped.stderr}`.match(/SIGINT: draining/g) ?? [], 'a single Ctrl-C reaches the worker once').toHaveLength(1);

    const done = await jobNow(succeededId);
    expect(done.status).toBe(JobStatus.SUCCEEDED);
    expect(done.result).toEqual({ counted: 20, resumed_from: 0 });

    const refusal = await run(the('cancelRunning').text);
    expect(refusal.code, describeShell(refusal)).toBe(1);
    expect(refusal.stderr).toMatch(/failed_precondition ILLEGAL_TRANSITION: a SUCCEEDED job cannot become CANCELLED/);
  });

  it('buf curl SubmitJob admits a job and replays it identically; --list-methods lists the services; plain curl lists jobs over HTTP/1.1', async () => {
    const first = succeeded(await run(the('bufSubmit').text));
    const id = first.job?.id as string;
    expect(id).toMatch(/^job_[a-z0-9]+$/);
    expect(first.job.status).toBe('JOB_STATUS_QUEUED');
    expect(first.replayed ?? false).toBe(false);
    const again = succeeded(await run(the('bufSubmit').text));
    expect(again.replayed).toBe(true);
    const { replayed: _replayed, ...rest } = again;
    expect(rest).toEqual(first);

    const methods = await run(the('listMethods').text);
    expect(methods.code, describeShell(methods)).toBe(0);
    const lines = methods.stdout.trim().split('\n');
    for (const method of AdmissionService.methods) expect(lines).toContain(`${AdmissionService.typeName}/${method.name}`);
    expect(lines).toContain('grpc.health.v1.Health/Check');
    expect(lines).toContain('grpc.reflection.v1.ServerReflection/ServerReflectionInfo');
    expect(lines).toContain('grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo');

    const overHttp1 = succeeded(await run(the('curlListJobs').text));
    expect((overHttp1.jobs as { id: string }[]).map((j) => j.id)).toContain(id);
  });

  it('Ctrl-C stops npm start cleanly; the next npm start keeps the data', async () => {
    await stopSystem(system!);
    system = await npmStart();
    expect(system.stdout()).toMatch(/Postgres is up on port \d+ \(existing cluster/);
    // The token from the first run is still valid (secrets.json is kept), and the jobs are still there.
    expect((await jobNow(orderId)).status).toBe(JobStatus.CANCELLED);
    expect(printed(await run(the('getJob').text))).toMatch(new RegExp(`^job ${succeededId}: SUCCEEDED$`, 'm'));
    await stopSystem(system);
  }, START_TIMEOUT_MS + 60_000);
});
