// The systems under test, all on the one durable PostgreSQL, each in a
// database of its own: the peers' schemas (hand-written SQL, pg-boss,
// graphile-worker) and the Docket deployments (this checkout or
// --docket-root, and --baseline-root). An instance id is a system id,
// optionally `@backlog` for the copy that holds the large backlog, so that
// backlog never shares a table with the other measurements.
import { loadDriver } from './drivers.mjs';
import { launchDocket } from './docket/instance.mjs';

export const databaseName = (instance) => instance.replace(/[@-]/g, '_');

/**
 * What a generator process gets to reach a Docket deployment (launchDocket):
 * one address per service (nginx's when it has a front) and its tokens.
 */
export async function docketConnection(deployment) {
  return {
    kind: 'docket',
    databaseUrl: deployment.databaseUrl,
    admissionUrl: deployment.entryUrls.admission,
    executionUrl: deployment.entryUrls.execution,
    userToken: await deployment.token('bench-user', 'user'),
    workerToken: await deployment.token('bench-worker', 'worker'),
    adminToken: await deployment.token('bench-admin', 'admin'),
  };
}

/**
 * Prepares every instance in `instances` on `server` (see bench/postgres.mjs).
 * `roots` maps `docket`, `docket-one` and `docket-baseline` to checkouts. Resolves with
 * `connect(instance)`, the configuration a generator process gets, and `stop()`.
 */
export async function startSystems(server, instances, roots) {
  const connections = new Map();
  const deployments = [];
  const stop = async () => {
    for (const deployment of deployments) await deployment.stop();
  };
  try {
    for (const instance of instances) {
      const system = instance.split('@')[0];
      const databaseUrl = await server.createDatabase(databaseName(instance), { withStatements: system.startsWith('docket') });
      if (system.startsWith('docket')) {
        const deployment = await launchDocket({ root: roots[system], databaseUrl, oneProcess: system === 'docket-one' });
        deployments.push(Object.assign(deployment, { instance }));
        connections.set(instance, await docketConnection(deployment));
      } else {
        await (await loadDriver(system)).prepare(databaseUrl);
        connections.set(instance, { kind: system, databaseUrl });
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    connect(instance) {
      const connection = connections.get(instance);
      if (!connection) throw new Error(`instance ${instance} was not started`);
      return connection;
    },
    /** The process ids of a Docket instance's services, by service name (`{}` for the other systems). */
    pidsOf: (instance) => deployments.find((deployment) => deployment.instance === instance)?.pids ?? {},
    /** Each Docket deployment: instance id, checkout, database URL and the warnings its services logged. */
    docketDeployments: () => deployments.map((deployment) => ({ instance: deployment.instance, root: deployment.root, databaseUrl: deployment.databaseUrl, complaints: deployment.complaints() })),
    stop,
  };
}
