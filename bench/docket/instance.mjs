// One Docket deployment under test: real service processes (state,
// admission, execution by default) launched from a checkout's
// `services/<name>/dist/main.js` against one database, exactly as
// `docket dev` and the tests start them. The orchestrator keeps these
// processes and reads their logs; it counts warning and error lines so the
// report can say whether a service complained during the run.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SERVICE_AUDIENCE, mintToken } from '@docket/auth';
import { launchService, serviceEntryPath, serviceEnvironment } from '@docket/cli';

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
 * Starts the `names` services from checkout `root` on `databaseUrl`
 * (`replicas` per name, default 1; every replica of a front service talks to
 * a state replica round-robin). `env` is added to every service's
 * environment, `nodeOptions` (e.g. `--cpu-prof`) to every Node command line.
 */
export async function launchDocket({ root, databaseUrl, names = ['state', 'admission', 'execution'], replicas = {}, env = {}, nodeOptions = [] }) {
  for (const name of names) {
    const entry = serviceEntryPath(root, name);
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
  const stop = async () => {
    for (const service of launched.reverse()) await service.stop('SIGTERM', 10_000);
  };
  try {
    for (const name of names) {
      urls[name] = [];
      pids[name] = [];
      for (let index = 0; index < (replicas[name] ?? 1); index += 1) {
        const stateUrl = urls.state?.[index % urls.state.length];
        const service = launchService({
          name,
          entry: serviceEntryPath(root, name),
          nodeOptions,
          env: { PATH: process.env.PATH ?? '', ...env, ...legacy, ...serviceEnvironment(name, settings, '127.0.0.1:0', stateUrl) },
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
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    root,
    urls,
    /** The operating-system process ids, per service name, in the order of `urls` (for /proc). */
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
