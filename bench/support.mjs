// Shared set-up for benchmarks: an embedded PostgreSQL in a temporary
// directory and real service processes on loopback, exactly as in tests.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { mintToken } from '@docket/auth';
import { launchService, serviceEntryPath, serviceEnvironment } from '@docket/cli';
import { startEmbeddedPostgres } from '@docket/embedded-postgres';

export const REPO_ROOT = new URL('..', import.meta.url).pathname;

/** Starts Postgres and the given services; returns their URLs and a stop function. */
export async function startSystem(names = ['state', 'admission'], { replicas = {} } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'docket-bench-'));
  const postgres = await startEmbeddedPostgres({ dataDir: join(dataDir, 'pg'), persistent: false });
  const databaseUrl = await postgres.createDatabase('bench');
  const authSecret = randomBytes(32).toString('base64url');
  const settings = {
    authSecret,
    cursorSecret: randomBytes(32).toString('base64url'),
    serviceToken: await mintToken({ secret: authSecret, subject: 'docket-internal', role: 'service' }),
    databaseUrl,
  };
  const launched = [];
  const urls = {};
  for (const name of names) {
    const count = replicas[name] ?? 1;
    urls[name] = [];
    for (let index = 0; index < count; index += 1) {
      const service = launchService({
        name,
        entry: serviceEntryPath(REPO_ROOT, name),
        env: { PATH: process.env.PATH ?? '', ...serviceEnvironment(name, settings, '127.0.0.1:0', urls.state?.[index % urls.state.length]) },
      });
      launched.push(service);
      urls[name].push(await service.ready);
    }
  }
  return {
    urls,
    databaseUrl,
    token: (subject, role = 'user') => mintToken({ secret: authSecret, subject, role }),
    async stop() {
      for (const service of launched.reverse()) await service.stop('SIGTERM', 10_000);
      await postgres.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `task` `total` times with `concurrency` in flight; returns per-call latencies (ms) and elapsed ms. */
export async function runConcurrently(total, concurrency, task) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const index = next++;
        const t0 = performance.now();
        await task(index);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, elapsedMs: performance.now() - started };
}

/** The q-quantile (0..1) of a list of numbers. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** A Connect gRPC client for `service` at `url` that sends `token` as a bearer. */
export function clientWith(service, url, token) {
  return createClient(
    service,
    createGrpcTransport({
      baseUrl: url,
      interceptors: [(next) => (request) => (request.header.set('authorization', `Bearer ${token}`), next(request))],
    }),
  );
}
