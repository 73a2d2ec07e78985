import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { until } from './polling.js';
import { postgresAnswers } from './postgres-answers.js';
import { postgresUserIfRoot } from './postgres-user.js';

/** Debian's PgBouncer (1.18; test/support/ensure-failover-stack.sh installs it). */
export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** A PgBouncer in front of one database, with a session-mode and a transaction-mode pool. */
export interface PgBouncer {
  /** The database through a pool in session mode. */
  readonly sessionUrl: string;
  /** The database through a pool in transaction mode. */
  readonly transactionUrl: string;
  /** The last lines of its log, for a failure message. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer on a free loopback port in front of `databaseUrl` (its
 * user and password are PgBouncer's only user), with two pools:
 * `docket_session` (`pool_mode = session`, 40 server connections: in
 * session mode each client connection holds one for its life) and
 * `docket_transaction` (`pool_mode = transaction`, `serverConnections`
 * shared by every client). Nothing but what the two modes need is configured: no
 * `ignore_startup_parameters`, no prepared-statement support (1.18 has
 * none).
 */
export async function startPgBouncer(databaseUrl: string, serverConnections = 2): Promise<PgBouncer> {
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const database = target.pathname.slice(1);
  const dir = await mkdtemp(join(tmpdir(), 'docket-pgbouncer-'));
  const identity = postgresUserIfRoot();
  await chmod(dir, 0o755);
  if (identity) await chown(dir, identity.uid, identity.gid);
  const port = await freePort();
  const server = `host=${target.hostname} port=${target.port} dbname=${database}`;
  await writeFile(join(dir, 'userlist.txt'), `"${user}" "${password}"\n`);
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    `[databases]
docket_session = ${server} pool_mode=session pool_size=40
docket_transaction = ${server} pool_mode=transaction pool_size=${serverConnections}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = md5
auth_file = ${join(dir, 'userlist.txt')}
max_client_conn = 400
logfile = ${join(dir, 'pgbouncer.log')}
`,
  );
  const child: ChildProcess = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...(identity ?? {}) });
  const url = (name: string): string => `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${name}`;
  const bouncer: PgBouncer = {
    sessionUrl: url('docket_session'),
    transactionUrl: url('docket_transaction'),
    log: async () => (await readFile(join(dir, 'pgbouncer.log'), 'utf8').catch(() => '')).split('\n').slice(-20).join('\n'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
  await until(() => postgresAnswers(bouncer.sessionUrl), 'PgBouncer to accept connections', 15_000, 100);
  return bouncer;
}
