// One Docket deployment under test: real service processes (state,
// admission, execution by default) launched from a checkout's
// `services/<name>/dist/main.js` against one database, exactly as
// `docket dev` and the tests start them. The orchestrator keeps these
// processes and reads their logs; it counts warning and error lines so the
// report can say whether a service complained during the run. With
// `front: 'nginx'`, the replicas run behind the nginx front of `docket dev
// --replicas` (docs/replicas.md), started by the same @docket/cli code.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_AUDIENCE, mintToken } from '@docket/auth';
import { SERVICE_NAMES, launchOneProcess, layOutFront, launchService, locateFrontPrograms, oneProcessEntryPath, oneProcessEnvironment, serviceEntryPath, serviceEnvironment, startFront } from '@docket/cli';

const LEVELS = { 40: 'warn', 50: 'error', 60: 'fatal', warn: 'warn', error: 'error', fatal: 'fatal' };

/** The level of a JSON log line if it is a warning or worse, else undefined. */
function complaintLevel(line) {
  if (!line.startsWith('{')) return undefined;
  try {
    return LEVELS[JSON.parse(line).level];
  } catch {
    return undefined;
  }
}

/** How long the tokens a benchmark mints live: longer than any run. */
const TOKEN_TTL_SECONDS = 86_400;

/**
 * The front of `docket dev --replicas` (nginx behind its port switch) before the `names` services'
 * replicas (`replicas` per name, default 1), in a temporary directory:
 * resolves with `{front, listenOf(name, index), stop()}`, `listenOf` the
 * address each replica must listen on.
 */
async function startFrontOf(names, replicas, complaints) {
  const counts = Object.fromEntries(SERVICE_NAMES.map((name) => [name, names.includes(name) ? (replicas[name] ?? 1) : 0]));
  const layout = await layOutFront({ host: '127.0.0.1', counts, ports: Object.fromEntries(SERVICE_NAMES.map((name) => [name, 0])) });
  const dir = mkdtempSync(join(tmpdir(), 'docket-bench-front-'));
  try {
    const front = await startFront({
      programs: await locateFrontPrograms(process.env),
      dir,
      accessLog: join(dir, 'access.log'),
      services: layout.services.filter((service) => names.includes(service.name)),
      // Their error logs are at level warn: every line is a complaint.
      onLine: (line) => complaints.push({ service: 'front', level: 'warn', line: line.slice(0, 500) }),
    });
    return {
      front,
      listenOf: (name, index) => layout.replicas[name][index],
      async stop() {
        await front.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Starts the `names` services from checkout `root` on `databaseUrl`
 * (`replicas` per name, default 1; every replica of a front service talks to
 * a state replica round-robin). With `front: 'nginx'`, nginx is started
 * first, as `docket dev --replicas` starts it, every replica listens where
 * its layout says and the front services reach state through nginx;
 * `entryUrls` are then nginx's addresses. With `oneProcess`, the `names`
 * services run in one process (`services/one-process`, its pids under
 * `one process`). `env` is added to every service's
 * environment, `nodeOptions` (e.g. `--cpu-prof`) to every Node command line.
 */
export async function launchDocket({ root, databaseUrl, names = ['state', 'admission', 'execution'], replicas = {}, front, oneProcess = false, env = {}, nodeOptions = [] }) {
  if (front !== undefined && front !== 'nginx') throw new Error(`unknown front ${front}; known: nginx`);
  const entries = oneProcess ? [oneProcessEntryPath(root)] : names.map((name) => serviceEntryPath(root, name));
  for (const entry of entries) {
    if (!existsSync(entry)) throw new Error(`${entry} is missing: build that checkout first (npm run build)`);
  }
  const authSecret = randomBytes(32).toString('base64url');
  const serviceAuthSecret = randomBytes(32).toString('base64url');
  const settings = { authSecret, cursorSecret: randomBytes(32).toString('base64url'), serviceAuthSecret, databaseUrl };
  // A checkout from before the internal secret (a --baseline-root) reads a
  // pre-minted service token and verifies it with DOCKET_AUTH_SECRET; the
  // current one ignores both.
  const legacy = {
    DOCKET_AUTH_SECRET: authSecret,
    DOCKET_SERVICE_TOKEN: await mintToken({ secret: authSecret, subject: 'docket-internal', role: 'service', ttlSeconds: TOKEN_TTL_SECONDS }),
  };
  const launched = [];
  const urls = {};
  const pids = {};
  const complaints = [];
  let nginx;
  const stop = async () => {
    for (const service of launched.reverse()) await service.stop('SIGTERM', 10_000);
    // After the replicas, which reach state through it while they drain.
    await nginx?.stop();
  };
  try {
    if (front === 'nginx') nginx = await startFrontOf(names, replicas, complaints);
    if (oneProcess) {
      const one = launchOneProcess({
        entry: oneProcessEntryPath(root),
        nodeOptions,
        env: { PATH: process.env.PATH ?? '', ...env, ...oneProcessEnvironment(settings, () => '127.0.0.1:0'), DOCKET_ONE_PROCESS_SERVICES: names.join(',') },
        onLine: (line) => {
          const level = complaintLevel(line);
          if (level) complaints.push({ service: 'one process', level, line: line.slice(0, 500) });
        },
      });
      launched.push(one.service);
      for (const [name, url] of Object.entries(await one.urls)) urls[name] = [url];
      pids['one process'] = [one.service.child.pid];
    }
    for (const name of oneProcess ? [] : names) {
      urls[name] = [];
      pids[name] = [];
      for (let index = 0; index < (replicas[name] ?? 1); index += 1) {
        const stateUrl = name === 'state' ? undefined : (nginx?.front.http2Urls.state ?? urls.state?.[index % urls.state.length]);
        const listen = nginx?.listenOf(name, index) ?? '127.0.0.1:0';
        const service = launchService({
          name,
          entry: serviceEntryPath(root, name),
          nodeOptions,
          env: { PATH: process.env.PATH ?? '', ...env, ...legacy, ...serviceEnvironment(name, settings, listen, stateUrl) },
          onLine: (line) => {
            const level = complaintLevel(line);
            if (level) complaints.push({ service: name, level, line: line.slice(0, 500) });
          },
        });
        launched.push(service);
        urls[name].push(await service.ready);
        pids[name].push(service.child.pid);
      }
    }
    if (nginx) pids.front = [nginx.front.pids.nginx, nginx.front.pids.haproxy];
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    root,
    /** Each replica's own URL, per service name. */
    urls,
    /** The one URL per service a client uses: nginx's with a front, else the first replica's. */
    entryUrls: Object.fromEntries(Object.keys(urls).map((name) => [name, nginx?.front.urls[name] ?? urls[name][0]])),
    /** The operating-system process ids, per service name, in the order of `urls` (for /proc), and with a front `front`'s: nginx and its port switch. */
    pids,
    databaseUrl,
    /**
     * A bearer token for `subject` with `role` (user, admin, worker, or
     * service for calling state directly), valid for the run.
     */
    token: (subject, role = 'user') => {
      const internal = role === 'service' && existsSync(join(root, 'packages/auth/dist/service-tokens.js'));
      return internal
        ? mintToken({ secret: serviceAuthSecret, subject, role, ttlSeconds: TOKEN_TTL_SECONDS, audience: SERVICE_AUDIENCE })
        : mintToken({ secret: authSecret, subject, role, ttlSeconds: TOKEN_TTL_SECONDS });
    },
    /** The settings the services were started with, for starting one more (`serviceEnvironment`). */
    settings,
    legacyEnv: legacy,
    /** Warning and error lines the services printed so far. */
    complaints: () => [...complaints],
    stop,
  };
}
