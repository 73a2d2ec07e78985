// Set-up for the in-process benchmarks that `--only journal,streams,reaper,wakeups,renewals`
// runs (they measure single services rather than compare systems): Docket
// services on a fresh database of the run's durable PostgreSQL, or of one
// started here when such a file runs on its own.
import { launchDocket } from './docket/instance.mjs';
import { startDurablePostgres } from './postgres.mjs';

export { clientWith } from './docket/clients.mjs';
export { runConcurrently } from './load/closed-loop.mjs';
export { quantile } from './stats.mjs';

export const REPO_ROOT = new URL('..', import.meta.url).pathname;

let databases = 0;

/**
 * Starts the `names` services from checkout `root` on a new database of
 * `server` (a bench/postgres.mjs server; one is started when omitted), with
 * `replicas` per name and `env` added to every service's environment (see
 * `launchDocket`). Returns their URLs, `databaseUrl`, `token(subject, role)`
 * and `stop()`.
 */
export async function startSystem(names = ['state', 'admission'], { server, root = REPO_ROOT, replicas = {}, env = {}, nodeOptions = [] } = {}) {
  const own = server ? undefined : await startDurablePostgres();
  const postgres = server ?? own;
  databases += 1;
  const databaseUrl = await postgres.createDatabase(`extra_${process.pid}_${databases}`);
  const docket = await launchDocket({ root, databaseUrl, names, replicas, env, nodeOptions });
  return {
    ...docket,
    async stop() {
      await docket.stop();
      await own?.stop();
    },
  };
}
