import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { checkPythonClient, generatePythonStubs, removePythonStubs } from './support/python-client-check.js';

let cluster: DocketServices;
let stubs: string;

beforeAll(async () => {
  [cluster, stubs] = await Promise.all([
    createMigratedTestDatabase('python client').then((databaseUrl) => startInProcessCluster({ databaseUrl })),
    generatePythonStubs(),
  ]);
});

afterAll(async () => {
  await stopInProcessClusters();
  await removePythonStubs(stubs);
});

describe('a Python grpcio client with stubs generated from proto/', () => {
  it('submits idempotently, pages jobs, works a job and verifies the hash chain and request digest on its own', async () => {
    await checkPythonClient(cluster, stubs, 'py-alice');
  });
});
