import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_AUDIENCE, mintToken } from '@docket/auth';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor, failureOf } from '../support/clients.js';
import type { DocketServices } from '../support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { openSql } from '../support/sql.js';

/*
 * The internal trust boundary (SPEC section 9): the state service takes a
 * caller's identity from the request body, so only the front services may
 * call it, with short-lived tokens signed by a secret the public token
 * issuer never holds. Whoever holds DOCKET_AUTH_SECRET, even minting role
 * `service` with `admin: true` in the body, gets UNAUTHENTICATED and
 * learns nothing.
 */

let cluster: DocketServices;

beforeAll(async () => {
  cluster = await startInProcessCluster({ databaseUrl: await createMigratedTestDatabase('internal boundary'), env: { execution: { DOCKET_BACKGROUND_LOOPS: 'off' } } });
});

afterAll(stopInProcessClusters);

/** ListJobs as an admin, as the body says: what an attacker with a state credential would ask. */
function listEverythingWith(token: string | undefined) {
  return clientFor(StateService, cluster.state.url, token).listJobs({ caller: { subject: 'x', admin: true }, pageSize: 10 });
}

describe('the state service', () => {
  it('accepts the front services and the test harness with service tokens signed by its own secret', async () => {
    const page = await listEverythingWith(cluster.serviceToken);
    expect(page.jobs).toEqual([]);
  });

  it('refuses every credential the public issuer can mint, whatever its role, and service tokens without its audience or exp', async () => {
    const publicSecret = cluster.secret;
    const serviceSecret = cluster.serviceAuthSecret;
    const candidates = {
      'service role, public secret': await mintToken({ secret: publicSecret, subject: 'x', role: 'service', ttlSeconds: 600 }),
      'service role, public secret, state audience': await mintToken({ secret: publicSecret, subject: 'x', role: 'service', ttlSeconds: 600, audience: SERVICE_AUDIENCE }),
      'admin, public secret': await mintToken({ secret: publicSecret, subject: 'x', role: 'admin', ttlSeconds: 600, audience: SERVICE_AUDIENCE }),
      'service secret, no audience': await mintToken({ secret: serviceSecret, subject: 'x', role: 'service', ttlSeconds: 600 }),
      'service secret, other audience': await mintToken({ secret: serviceSecret, subject: 'x', role: 'service', ttlSeconds: 600, audience: 'docket-admission' }),
      'service secret, expired': await mintToken({ secret: serviceSecret, subject: 'x', role: 'service', ttlSeconds: -120, audience: SERVICE_AUDIENCE }),
    };
    const refusals = await Promise.all(Object.values(candidates).map((token) => failureOf(listEverythingWith(token))));
    const none = await failureOf(listEverythingWith(undefined));
    expect(none).toMatchObject({ code: Code.Unauthenticated, reason: 'UNAUTHENTICATED' });
    for (const [what, refusal] of Object.entries(candidates).map(([what], index) => [what, refusals[index]] as const)) {
      expect([what, refusal]).toEqual([what, none]);
    }
  });

  it('refuses a token of another role signed with its own secret as PERMISSION_DENIED', async () => {
    const worker = await mintToken({ secret: cluster.serviceAuthSecret, subject: 'x', role: 'worker', ttlSeconds: 600, audience: SERVICE_AUDIENCE });
    expect(await failureOf(listEverythingWith(worker))).toMatchObject({ code: Code.PermissionDenied, reason: 'PERMISSION_DENIED' });
  });
});

describe('a worker token that grants queues', () => {
  it('registers for those queues only; any other queue is PERMISSION_DENIED and registers nothing', async () => {
    const token = await cluster.tokenFor('granted-worker', 'worker', ['emails', 'reports']);
    const execution = clientFor(ExecutionService, cluster.execution.url, token);
    const registered = await execution.registerWorker({ workerName: 'granted-1', queues: ['emails'], maxConcurrency: 1 });
    expect(registered.workerIncarnation).not.toBe('');
    const outside = await failureOf(execution.registerWorker({ workerName: 'granted-2', queues: ['emails', 'payroll'], maxConcurrency: 1 }));
    expect(outside).toMatchObject({ code: Code.PermissionDenied, reason: 'PERMISSION_DENIED', message: 'permission denied' });
    const sql = await openSql(cluster.databaseUrl);
    try {
      const names = await sql.query<{ name: string }>('select name from worker_names where subject = $1 order by name', ['granted-worker']);
      expect(names.rows.map((row) => row.name)).toEqual(['granted-1']);
    } finally {
      await sql.end();
    }
    const ungranted = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor('any-worker', 'worker'));
    expect((await ungranted.registerWorker({ workerName: 'any-1', queues: ['payroll'], maxConcurrency: 1 })).workerIncarnation).not.toBe('');
  });
});
