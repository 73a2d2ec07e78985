import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyBearer } from '@docket/auth';
import { createTestDatabase } from '../../../test/support/database.js';
import { readDevSecrets } from './dev-secrets.js';
import type { ReplicaCounts } from './replica-counts.js';
import { runDev } from './run-dev.js';
import type { ServiceName } from './service-names.js';
import { isProcessAlive } from '../../../test/support/process-alive.js';

const FAKE_SERVICE = fileURLToPath(new URL('../../../test/support/fixtures/fake-service.mjs', import.meta.url));

const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function scratchDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'docket-dev-'));
  scratch.push(dir);
  return dir;
}

/** A fixture entry that sets `env` before loading the fake service. */
async function fakeServiceWith(dir: string, name: string, env: Record<string, string>): Promise<string> {
  const file = join(dir, `${name}.mjs`);
  await writeFile(
    file,
    `Object.assign(process.env, ${JSON.stringify(env)});\nawait import(${JSON.stringify(pathToFileURL(FAKE_SERVICE).href)});\n`,
  );
  return file;
}

interface DevRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/**
 * Runs `docket dev` against fake services on free ports; once the summary
 * is printed, calls `whileRunning` and then stops it as Ctrl-C would.
 */
async function runDevUntilReady(options: {
  env: NodeJS.ProcessEnv;
  entryFor?: (name: ServiceName) => string;
  whileRunning?: (out: string) => Promise<void>;
  consoleRoot?: string;
  replicas?: ReplicaCounts;
}): Promise<DevRun> {
  const stop = new AbortController();
  let out = '';
  let err = '';
  let running: Promise<void> = Promise.resolve();
  const code = await runDev({
    env: {
      PATH: process.env['PATH'],
      DOCKET_STATE_PORT: '0',
      DOCKET_ADMISSION_PORT: '0',
      DOCKET_EXECUTION_PORT: '0',
      DOCKET_EVENTS_PORT: '0',
      ...options.env,
    },
    cwd: process.cwd(),
    out: (text) => {
      out += text;
      if (text.includes('Docket is running')) {
        running = (options.whileRunning?.(out) ?? Promise.resolve()).finally(() => stop.abort());
      }
    },
    err: (text) => (err += text),
    logMode: 'warn',
    colors: false,
    entryFor: options.entryFor ?? (() => FAKE_SERVICE),
    stop: stop.signal,
    ...(options.consoleRoot === undefined ? {} : { consoleRoot: options.consoleRoot }),
    ...(options.replicas === undefined ? {} : { replicas: options.replicas }),
  });
  // Surface a failed `whileRunning`; do not wait for one the run outlived.
  await Promise.race([running, new Promise((resolve) => setImmediate(resolve))]);
  return { code, out, err };
}

async function currentDatabase(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ name: string }>('select current_database() as name')).rows[0]?.name;
  } finally {
    await client.end();
  }
}

/** The pids the fake services logged, read from `docket dev`'s log files. */
function servicePids(dataDir: string, names = ['state', 'admission', 'execution', 'events']): Promise<number[]> {
  return Promise.all(
    names.map(async (name) => {
      const log = await readFile(join(dataDir, 'logs', `${name}.log`), 'utf8');
      return Number(/"pid":(\d+)/.exec(log)?.[1]);
    }),
  );
}

/**
 * Asserts that each of `pids` is a real process id (so a log without one
 * cannot pass as "stopped") and that no such process is left.
 */
function expectAllStopped(pids: readonly number[], count = 4): void {
  expect(pids).toHaveLength(count);
  for (const pid of pids) {
    expect(Number.isSafeInteger(pid) && pid > 0, `pid ${pid} is a positive integer`).toBe(true);
    expect(isProcessAlive(pid), `pid ${pid} is not alive`).toBe(false);
  }
}

describe('runDev', () => {
  it('runs embedded Postgres and four services, prints a usable summary, and stops in order', async () => {
    const dataDir = join(await scratchDir(), '.docket');
    let databaseUrl = '';
    const first = await runDevUntilReady({
      env: { DOCKET_DATA_DIR: dataDir },
      whileRunning: async (out) => {
        databaseUrl = /postgres +(postgres:\/\/\S+)/.exec(out)?.[1] ?? '';
        expect(await currentDatabase(databaseUrl)).toBe('docket');
      },
    });
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/healthy after \d+\.\d s/);
    for (const name of ['admission', 'execution', 'events', 'state']) {
      expect(first.out).toMatch(new RegExp(`\\n  ${name} +http://127\\.0\\.0\\.1:\\d+ `));
    }
    expect(first.out).toContain('/docket.admission.v1.AdmissionService/SubmitJob');
    expect(first.out).toMatch(/Stopped\.\n$/);

    const secrets = await readDevSecrets(dataDir);
    const userToken = /user +\(sub "dev"\) +(\S+)/.exec(first.out)?.[1];
    const workerToken = /worker \(sub "dev-worker"\) +(\S+)/.exec(first.out)?.[1];
    expect(await verifyBearer(`Bearer ${userToken}`, secrets?.authSecret ?? '')).toMatchObject({
      ok: true,
      principal: { subject: 'dev', role: 'user' },
    });
    expect(await verifyBearer(`Bearer ${workerToken}`, secrets?.authSecret ?? '')).toMatchObject({
      ok: true,
      principal: { subject: 'dev-worker', role: 'worker' },
    });

    // Everything is down: the four services and Postgres.
    expectAllStopped(await servicePids(dataDir));
    await expect(currentDatabase(databaseUrl)).rejects.toThrow();
    const stateLog = await readFile(join(dataDir, 'logs', 'state.log'), 'utf8');
    expect(stateLog).toContain('"msg":"draining"');
    expect((await stat(join(dataDir, 'logs', 'postgres.log'))).size).toBeGreaterThan(0);

    // A second run reuses the cluster (same password) and the secrets.
    const password = await readFile(join(dataDir, 'postgres', 'password'), 'utf8');
    const second = await runDevUntilReady({ env: { DOCKET_DATA_DIR: dataDir } });
    expect(second.code).toBe(0);
    expect(await readDevSecrets(dataDir)).toEqual(secrets);
    expect(await readFile(join(dataDir, 'postgres', 'password'), 'utf8')).toBe(password);
  });

  it('serves the web console, names the services in its config.json, and has the services allow its origin', async () => {
    const dir = await scratchDir();
    const consoleRoot = join(dir, 'console');
    await mkdir(consoleRoot);
    await writeFile(join(consoleRoot, 'index.html'), '<!doctype html><title>Docket console</title>');
    await writeFile(join(dir, 'beside-the-console.txt'), 'not to be served');
    let seen: { page: string; config: unknown; consoleUrl: string; admission: string; events: string; escape: number } | undefined;
    const run = await runDevUntilReady({
      env: { DOCKET_DATA_DIR: join(dir, '.docket'), DOCKET_DATABASE_URL: 'postgres://unused/db', DOCKET_CONSOLE_PORT: '0' },
      consoleRoot,
      whileRunning: async (out) => {
        const consoleUrl = /\n  console +(http:\/\/127\.0\.0\.1:\d+) /.exec(out)?.[1] ?? '';
        const urlOf = (name: string): string => new RegExp(`\\n  ${name} +(http://\\S+)`).exec(out)?.[1] ?? '';
        seen = {
          page: await (await fetch(`${consoleUrl}/`)).text(),
          config: await (await fetch(`${consoleUrl}/config.json`)).json(),
          consoleUrl,
          admission: urlOf('admission'),
          events: urlOf('events'),
          escape: (await fetch(`${consoleUrl}/..%2fbeside-the-console.txt`)).status,
        };
      },
    });
    expect(run.code).toBe(0);
    expect(seen?.consoleUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(seen?.page).toContain('Docket console');
    expect(seen?.config).toEqual({ admissionUrl: seen?.admission, eventsUrl: seen?.events });
    expect(seen?.escape).toBe(404);
    for (const name of ['admission', 'events']) {
      const log = await readFile(join(dir, '.docket', 'logs', `${name}.log`), 'utf8');
      expect(log).toContain('"DOCKET_CORS_ORIGINS"');
    }
  });

  it('with replicas, puts the front (nginx behind its port switch) on the services’ ports before one process per replica, the fronts reaching state through nginx, and stops them all', async () => {
    const dir = await scratchDir();
    const dataDir = join(dir, '.docket');
    const consoleRoot = join(dir, 'console');
    await mkdir(consoleRoot);
    await writeFile(join(consoleRoot, 'index.html'), '<!doctype html><title>Docket console</title>');
    let nginxPid = 0;
    let switchPid = 0;
    let config: unknown;
    const run = await runDevUntilReady({
      env: { DOCKET_DATA_DIR: dataDir, DOCKET_DATABASE_URL: 'postgres://unused/db', DOCKET_CONSOLE_PORT: '0' },
      consoleRoot,
      replicas: { state: 2, admission: 2, execution: 1, events: 2 },
      whileRunning: async (out) => {
        nginxPid = Number(await readFile(join(dataDir, 'nginx', 'nginx.pid'), 'utf8'));
        switchPid = Number(await readFile(join(dataDir, 'nginx', 'port-switch.pid'), 'utf8'));
        const consoleUrl = /\n  console +(http:\/\/127\.0\.0\.1:\d+) /.exec(out)?.[1] ?? '';
        config = await (await fetch(`${consoleUrl}/config.json`)).json();
      },
    });
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    const urlOf = (name: string): string => new RegExp(`\\n  ${name} +(http://\\S+)`).exec(run.out)?.[1] ?? '';
    // The services' ports are the switch's; it passes HTTP/2 to nginx's HTTP/2 listener of each, where the fronts reach state.
    const switchConfig = await readFile(join(dataDir, 'nginx', 'port-switch.cfg'), 'utf8');
    const stateSwitch = new RegExp(`frontend state\\n  bind ${new URL(urlOf('state')).host}\\n[^]*?backend state_http2\\n  server nginx (\\S+)`).exec(switchConfig);
    expect(stateSwitch?.[1]).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await readFile(join(dataDir, 'nginx', 'nginx.conf'), 'utf8')).toContain(`listen ${stateSwitch?.[1]} http2;`);
    for (const replica of ['admission-1', 'admission-2', 'execution', 'events-1', 'events-2']) {
      const log = await readFile(join(dataDir, 'logs', `${replica}.log`), 'utf8');
      expect(log, replica).toContain(`"stateUrl":"http://${stateSwitch?.[1]}"`);
    }
    // The console (a browser: HTTP/1.1) is given the services' ports, which take HTTP/1.1 too.
    expect(config).toEqual({ admissionUrl: urlOf('admission'), eventsUrl: urlOf('events') });
    expectAllStopped([nginxPid, switchPid], 2);
    const replicas = ['state-1', 'state-2', 'admission-1', 'admission-2', 'execution', 'events-1', 'events-2'];
    expectAllStopped(await servicePids(dataDir, replicas), replicas.length);
  });

  it('stops everything and exits 1 when a service dies', async () => {
    const dir = await scratchDir();
    const crashing = await fakeServiceWith(dir, 'crashing', { FAKE_SERVICE_CRASH_AFTER_MS: '1500' });
    const { code, err } = await runDevUntilReady({
      env: { DOCKET_DATA_DIR: join(dir, '.docket'), DOCKET_DATABASE_URL: await createTestDatabase('dev crash') },
      entryFor: (name) => (name === 'execution' ? crashing : FAKE_SERVICE),
      // Real time: a timeout race, the bound within which the crash (1.5 s in) must stop everything.
      whileRunning: () => new Promise((resolve) => setTimeout(resolve, 10_000)),
    });
    expect(code).toBe(1);
    expect(err).toMatch(/the execution service exited unexpectedly \(exit code 3\)/);
    expect(err).toContain('fake-service: crashing on purpose');
    expectAllStopped(await servicePids(join(dir, '.docket')));
  });

  it('exits 1 with the service output when the state service cannot start', async () => {
    const dir = await scratchDir();
    const failing = await fakeServiceWith(dir, 'failing', { FAKE_SERVICE_EXIT_BEFORE_READY: '2' });
    const { code, out, err } = await runDevUntilReady({
      env: { DOCKET_DATA_DIR: join(dir, '.docket'), DOCKET_DATABASE_URL: 'postgres://unused/db' },
      entryFor: (name) => (name === 'state' ? failing : FAKE_SERVICE),
    });
    expect(code).toBe(1);
    expect(out).not.toContain('Docket is running');
    expect(err).toMatch(/state (exited before listening|service exited unexpectedly) \(exit code 2\)/);
    expect(err).toContain('failing on purpose before listening');
  });

  it('stops promptly when asked to during startup', async () => {
    const dir = await scratchDir();
    const slow = await fakeServiceWith(dir, 'slow', { FAKE_SERVICE_READY_DELAY_MS: '30000' });
    const stop = new AbortController();
    // Real time: the stop is asked for a second into a startup that would take 30 s; the test times how promptly it ends.
    setTimeout(() => stop.abort(), 1_000);
    const began = Date.now();
    const code = await runDev({
      env: {
        PATH: process.env['PATH'],
        DOCKET_DATA_DIR: join(dir, '.docket'),
        DOCKET_DATABASE_URL: 'postgres://unused/db',
        DOCKET_STATE_PORT: '0',
      },
      cwd: dir,
      out: () => undefined,
      err: () => undefined,
      logMode: 'none',
      colors: false,
      entryFor: () => slow,
      stop: stop.signal,
    });
    expect(code).toBe(0);
    expect(Date.now() - began).toBeLessThan(10_000);
    expectAllStopped(await servicePids(join(dir, '.docket'), ['state']), 1);
  });
});
