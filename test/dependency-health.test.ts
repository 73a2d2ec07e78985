import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Health, HealthCheckResponse_ServingStatus as Status } from '@docket/proto/grpc/health/v1/health_pb.js';
import { clientFor } from './support/clients.js';
import { startCluster, stopAll, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';

/*
 * Health tells the truth about dependencies: a service that cannot reach
 * what it needs (state: Postgres; admission, execution and events: the
 * state service) reports NOT_SERVING, so a load balancer or a Kubernetes
 * probe stops sending it work, and SERVING again once it is back.
 */

let cluster: DocketCluster;

beforeAll(async () => {
  cluster = await startCluster({ databaseUrl: await createMigratedTestDatabase('dependency health') });
});

afterAll(stopAll);

async function overall(url: string): Promise<Status> {
  try {
    return (await clientFor(Health, url).check({ service: '' }, { timeoutMs: 2_000 })).status;
  } catch {
    return Status.UNKNOWN;
  }
}

/** Polls the overall health of `url` every 200 ms until it is `wanted`; fails after `timeoutMs`. */
async function until(url: string, wanted: Status, timeoutMs = 15_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const seen = await overall(url);
    if (seen === wanted) return;
    if (performance.now() > deadline) throw new Error(`${url} reports ${Status[seen]}, not ${Status[wanted]}`);
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('health follows the dependencies', () => {
  it('the front services report NOT_SERVING while the state service is down, and SERVING once it is back', async () => {
    const fronts = [cluster.admission.url, cluster.execution.url, cluster.events.url];
    for (const url of fronts) expect(await overall(url)).toBe(Status.SERVING);
    await cluster.state.kill();
    for (const url of fronts) await until(url, Status.NOT_SERVING);
    await cluster.state.restart();
    for (const url of fronts) await until(url, Status.SERVING);
  });

  it('the state service reports NOT_SERVING while Postgres refuses it, and SERVING once it accepts again', async () => {
    const database = new URL(cluster.databaseUrl).pathname.slice(1);
    const admin = new pg.Client({ connectionString: cluster.databaseUrl.replace(`/${database}`, '/postgres') });
    await admin.connect();
    try {
      expect(await overall(cluster.state.url)).toBe(Status.SERVING);
      await admin.query(`alter database ${database} allow_connections false`);
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [database]);
      await until(cluster.state.url, Status.NOT_SERVING);
      await until(cluster.admission.url, Status.NOT_SERVING); // it follows its dependency's overall status
    } finally {
      await admin.query(`alter database ${database} allow_connections true`);
      await admin.end();
    }
    await until(cluster.state.url, Status.SERVING, 20_000);
    await until(cluster.admission.url, Status.SERVING, 20_000);
  });
});
