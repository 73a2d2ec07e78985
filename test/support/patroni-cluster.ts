import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { until } from './polling.js';
import { postgresAnswers } from './postgres-answers.js';
import { postgresUserIfRoot } from './postgres-user.js';

/*
 * A highly available PostgreSQL as production runs it, from Debian's
 * packages (test/support/ensure-failover-stack.sh): one etcd, two
 * PostgreSQL 15 servers under Patroni 3.0, and HAProxy sending one port
 * to whichever node Patroni's REST API says is the primary (`GET
 * /primary` answers 200 only there). Everything listens on free loopback
 * ports under a temporary directory; Patroni and PostgreSQL run as the
 * `postgres` user when the test runs as root (PostgreSQL refuses root).
 *
 * A killed node can be brought back (`rejoin`): its Patroni restarts and
 * re-joins it as a replica of the new leader, with pg_rewind
 * (`use_pg_rewind: true`; Patroni first runs the crash recovery a killed
 * primary needs in single-user mode) or, should the rewind fail, from a new
 * base backup (`remove_data_directory_on_rewind_failure`), so a test can
 * fail over again and again in one cluster.
 */

const PATRONI = '/usr/bin/patroni';
const ETCD = '/usr/bin/etcd';
const HAPROXY = '/usr/sbin/haproxy';
const PG_BIN = '/usr/lib/postgresql/15/bin';
const SUPERUSER_PASSWORD = 'docket-failover';

/** One Patroni-managed PostgreSQL server. */
export interface PatroniNode {
  readonly name: string;
  readonly restPort: number;
  readonly pgPort: number;
  readonly dataDir: string;
  /** The Patroni process (it starts and stops its PostgreSQL); a new one after {@link PatroniCluster.rejoin}. */
  patroni: ChildProcess;
}

/** How a killed node came back as a replica ({@link PatroniCluster.rejoin}). */
export interface Rejoined {
  /**
   * `pg_rewind`: its WAL had gone past the new timeline's fork point and was
   * rewound; `basebackup`: its data directory was copied anew from the leader
   * (the rewind failed); `restart`: it had not diverged and simply followed.
   */
  readonly how: 'pg_rewind' | 'basebackup' | 'restart';
  /** From the restart of its Patroni to the node following the leader as {@link PatroniCluster.rejoin} requires. */
  readonly ms: number;
}

/** One member as Patroni's REST `GET /cluster` lists it. */
export interface PatroniMember {
  readonly name: string;
  /** `leader`, `sync_standby` or `replica`. */
  readonly role: string;
  /** `running`, `starting`, `stopped`, `crashed`, ... */
  readonly state: string;
  readonly timeline?: number;
  /** Bytes behind the leader's last published position (`unknown` when the member published none). */
  readonly lag?: number | 'unknown';
}

export interface PatroniCluster {
  /** The superuser URL of database `postgres` through HAProxy (always the leader). */
  readonly url: string;
  readonly nodes: readonly PatroniNode[];
  /** The node whose REST API answers `/primary` with 200, if any. */
  leader(): Promise<PatroniNode | undefined>;
  /** kill -9 of the node's Patroni and of its postmaster (its backends exit with it), and of WAL senders held by {@link PatroniCluster.holdReplication}. */
  kill(node: PatroniNode): Promise<void>;
  /**
   * Stops (SIGSTOP) the leader's WAL senders, so the standby receives no
   * more WAL while the leader goes on committing: with `synchronous: false`
   * the standby falls behind by everything committed from now on (what it
   * already received is all it will have). Returns how many were stopped.
   * `kill` and `stop` kill them.
   */
  holdReplication(): Promise<number>;
  /**
   * Brings back a node {@link PatroniCluster.kill} killed, once another node
   * leads: waits until every process of its old PostgreSQL has exited,
   * restarts its Patroni (which rewinds or re-copies it, see above), and
   * waits until it follows the leader on the leader's timeline, as the
   * synchronous standby with `synchronous: true` (REST `/sync` answers 200
   * and `/cluster` calls it `sync_standby`) or as a replica (`/replica`)
   * without. Then the leader can be killed again and this node takes over.
   */
  rejoin(node: PatroniNode): Promise<Rejoined>;
  /** The status Patroni's REST API on `node` answers `path` with (`/primary`, `/sync`, `/replica`, ...); 0 if it does not answer. */
  restStatus(node: PatroniNode, path: string): Promise<number>;
  /** The members as the REST `GET /cluster` of the first node that answers lists them (none if none answers). */
  members(): Promise<PatroniMember[]>;
  /** Creates database `name` through HAProxy and returns its superuser URL. */
  createDatabase(name: string): Promise<string>;
  /** Every process stopped, the directory removed. */
  stop(): Promise<void>;
  /** The last lines each process logged, for a failure message. */
  logs(): Promise<string>;
}

/** Whether this machine has the stack (the test skips without it only outside CI). */
export function failoverStackInstalled(): boolean {
  try {
    execFileSync(PATRONI, ['--version'], { stdio: 'ignore' });
    execFileSync(`${PG_BIN}/postgres`, ['--version'], { stdio: 'ignore' });
    execFileSync(ETCD, ['--version'], { stdio: 'ignore' });
    execFileSync(HAPROXY, ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function patroniConfig(dir: string, node: PatroniNode, etcdPort: number, synchronous: boolean): string {
  return `scope: docket-failover
name: ${node.name}
restapi: {listen: '127.0.0.1:${node.restPort}', connect_address: '127.0.0.1:${node.restPort}'}
etcd3: {host: '127.0.0.1:${etcdPort}'}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    synchronous_mode: ${synchronous}
    maximum_lag_on_failover: 1073741824
    postgresql:
      use_pg_rewind: true
      parameters: {max_connections: 200, wal_level: replica, hot_standby: 'on', max_wal_senders: 10, max_replication_slots: 10, wal_keep_size: 256MB}
  initdb: [{encoding: UTF8}, {auth: md5}]
  pg_hba: ['host replication replicator 127.0.0.1/32 md5', 'host all all 127.0.0.1/32 md5', 'local all all trust']
postgresql:
  listen: '127.0.0.1:${node.pgPort}'
  connect_address: '127.0.0.1:${node.pgPort}'
  data_dir: '${node.dataDir}'
  bin_dir: '${PG_BIN}'
  pgpass: '${join(dir, `${node.name}.pgpass`)}'
  remove_data_directory_on_rewind_failure: true
  authentication:
    replication: {username: replicator, password: replicator-pw}
    superuser: {username: postgres, password: '${SUPERUSER_PASSWORD}'}
  parameters: {unix_socket_directories: '${dir}'}
`;
}

function haproxyConfig(port: number, statsPort: number, nodes: readonly PatroniNode[]): string {
  return `global
  maxconn 400
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:${port}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 300ms fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} check port ${node.restPort}`).join('\n')}
listen stats
  bind 127.0.0.1:${statsPort}
  mode http
  timeout client 5s
  timeout server 5s
  stats enable
  stats uri /stats
`;
}

/** The state (`R`, `S`, `Z`, ...) of a process, from /proc; undefined once it is gone. */
async function processState(pid: number): Promise<string | undefined> {
  let line: string;
  try {
    line = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
    throw error;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  return line.slice(line.lastIndexOf(')') + 2).split(' ')[0];
}

/** The pids of the processes whose parent is `pid` (a postmaster's backends and auxiliary processes; it has one thread). */
async function childrenOf(pid: number): Promise<number[]> {
  const listed = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
  return listed.trim().split(/\s+/).filter((field) => field !== '').map(Number);
}

/** Starts etcd, two Patroni nodes (the first bootstraps and leads) and HAProxy, and waits until the standby follows. */
export async function startPatroniCluster(options: { readonly synchronous: boolean }): Promise<PatroniCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'docket-patroni-'));
  const identity = postgresUserIfRoot();
  await chmod(dir, 0o755);
  if (identity) await chown(dir, identity.uid, identity.gid);
  const logFiles: string[] = [];
  const processes: ChildProcess[] = [];
  const launch = async (name: string, command: string, args: string[], asPostgres: boolean): Promise<ChildProcess> => {
    const log = join(dir, `${name}.log`);
    if (!logFiles.includes(log)) logFiles.push(log);
    const { openSync } = await import('node:fs');
    const fd = openSync(log, 'a');
    const child = spawn(command, args, { stdio: ['ignore', fd, fd], ...(asPostgres && identity ? identity : {}), env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir } });
    processes.push(child);
    return child;
  };

  const etcdPort = await freePort();
  const etcdPeerPort = await freePort();
  await launch('etcd', ETCD, [
    '--name', 'e1', '--data-dir', join(dir, 'etcd'),
    '--listen-client-urls', `http://127.0.0.1:${etcdPort}`, '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
    '--listen-peer-urls', `http://127.0.0.1:${etcdPeerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeerPort}`,
    '--initial-cluster', `e1=http://127.0.0.1:${etcdPeerPort}`,
  ], false);

  const nodes: PatroniNode[] = [];
  for (const name of ['n1', 'n2']) {
    const node = { name, restPort: await freePort(), pgPort: await freePort(), dataDir: join(dir, name), patroni: undefined as unknown as ChildProcess };
    await mkdir(node.dataDir, { mode: 0o700 });
    if (identity) await chown(node.dataDir, identity.uid, identity.gid);
    const config = join(dir, `${name}.yml`);
    await writeFile(config, patroniConfig(dir, node, etcdPort, options.synchronous));
    nodes.push(node);
  }
  const startNode = async (node: PatroniNode): Promise<void> => {
    node.patroni = await launch(node.name, PATRONI, [join(dir, `${node.name}.yml`)], true);
  };
  const status = async (node: PatroniNode, path: string): Promise<number> => {
    try {
      return (await fetch(`http://127.0.0.1:${node.restPort}${path}`, { signal: AbortSignal.timeout(1_000) })).status;
    } catch {
      return 0;
    }
  };

  const haproxyPort = await freePort();
  const statsPort = await freePort();
  /**
   * The servers HAProxy now sends connections to. HAProxy 2.6 starts every
   * server UP and marks one down only after its checks fail, so until then
   * a connection may land on the standby.
   */
  const routedTo = async (): Promise<string[]> => {
    try {
      const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`, { signal: AbortSignal.timeout(1_000) })).text();
      const [header = [], ...rows] = csv.trim().split('\n').map((line) => line.split(','));
      const status = header.indexOf('status');
      // "UP 1/2" is a server going down that still takes connections.
      return rows.filter((row) => row[0] === 'primary' && nodes.some((node) => node.name === row[1]) && row[status]?.startsWith('UP')).map((row) => row[1]!);
    } catch {
      return [];
    }
  };
  /** The WAL senders `holdReplication` stopped. */
  const heldWalSenders: number[] = [];
  /**
   * The processes of each killed node's PostgreSQL (its postmaster and that
   * one's children): a new postmaster refuses to start on the data directory
   * while any of them still holds its shared memory, so `rejoin` waits them out.
   */
  const killedPostgres = new Map<PatroniNode, number[]>();
  const killHeldWalSenders = (): void => {
    for (const pid of heldWalSenders.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
  };
  const cluster: PatroniCluster = {
    url: `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${haproxyPort}/postgres`,
    nodes,
    async leader() {
      for (const node of nodes) if ((await status(node, '/primary')) === 200) return node;
      return undefined;
    },
    async kill(node) {
      const pid = Number((await readFile(join(node.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      if (pid > 0) killedPostgres.set(node, [pid, ...(await childrenOf(pid))]);
      node.patroni.kill('SIGKILL');
      if (pid > 0) process.kill(pid, 'SIGKILL');
      // A stopped WAL sender outlives its postmaster: once killed, it sends nothing it had not sent.
      killHeldWalSenders();
    },
    async holdReplication() {
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_replication');
        for (const { pid } of rows) {
          process.kill(pid, 'SIGSTOP');
          heldWalSenders.push(pid);
        }
        return rows.length;
      } finally {
        await client.end();
      }
    },
    async rejoin(node) {
      const leader = await cluster.leader();
      if (!leader || leader === node) throw new Error(`${node.name} can rejoin only once another node leads (the leader is ${leader?.name ?? 'none'})`);
      const old = killedPostgres.get(node) ?? [];
      await until(async () => (await Promise.all(old.map(processState))).every((state) => state === undefined || state === 'Z'), `the processes of ${node.name}'s killed PostgreSQL to exit`, 30_000, 100);
      killedPostgres.delete(node);
      const log = join(dir, `${node.name}.log`);
      const logStart = (await stat(log)).size;
      const restartedAt = performance.now();
      await startNode(node);
      const following = async (): Promise<boolean> => {
        if ((await status(node, options.synchronous ? '/sync' : '/replica')) !== 200) return false;
        const members = await cluster.members();
        const self = members.find((member) => member.name === node.name);
        const head = members.find((member) => member.role === 'leader');
        return head?.name === leader.name && self?.state === 'running' && self.timeline === head.timeline && (!options.synchronous || self.role === 'sync_standby');
      };
      try {
        await until(following, `${node.name} to follow ${leader.name}${options.synchronous ? ' as its synchronous standby' : ''}`, 180_000, 250);
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${JSON.stringify(await cluster.members())}\n${await cluster.logs()}`);
      }
      const ms = performance.now() - restartedAt;
      const logged = (await readFile(log)).subarray(logStart).toString('utf8');
      const how = logged.includes('replica has been created using basebackup') ? 'basebackup' : logged.includes('pg_rewind exit code=0') ? 'pg_rewind' : 'restart';
      return { how, ms };
    },
    restStatus: status,
    async members() {
      for (const node of nodes) {
        try {
          const response = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, { signal: AbortSignal.timeout(1_000) });
          if (response.status === 200) return ((await response.json()) as { members: PatroniMember[] }).members;
        } catch (error) {
          // A node that does not answer (killed, restarting): ask the next one.
          if (!(error instanceof Error) || !['AbortError', 'TimeoutError', 'TypeError'].includes(error.name)) throw error;
        }
      }
      return [];
    },
    async createDatabase(name) {
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      try {
        await client.query(`create database "${name}"`);
      } finally {
        await client.end();
      }
      return cluster.url.replace(/\/postgres$/, `/${name}`);
    },
    async stop() {
      killHeldWalSenders();
      for (const child of processes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      // Patroni's PostgreSQL servers outlive a killed Patroni: stop them by their pid files.
      for (const node of nodes) {
        const pid = Number((await readFile(join(node.dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
        if (pid > 0) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
      await rm(dir, { recursive: true, force: true });
    },
    async logs() {
      const tails = await Promise.all(logFiles.map(async (file) => `--- ${file}\n${(await readFile(file, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n')}`));
      return tails.join('\n');
    },
  };
  try {
    await startNode(nodes[0]!);
    await until(async () => (await status(nodes[0]!, '/primary')) === 200, 'the first Patroni node to lead', 60_000, 250);
    await startNode(nodes[1]!);
    await until(async () => (await status(nodes[1]!, options.synchronous ? '/sync' : '/replica')) === 200, 'the second node to follow', 90_000, 250);
    await writeFile(join(dir, 'haproxy.cfg'), haproxyConfig(haproxyPort, statsPort, nodes));
    await launch('haproxy', HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], false);
    await until(async () => (await routedTo()).join() === nodes[0]!.name, 'HAProxy to route to the leader alone', 30_000, 100);
    await until(() => postgresAnswers(cluster.url), 'HAProxy to reach the leader', 30_000, 250);
  } catch (error) {
    const logs = await cluster.logs();
    await cluster.stop();
    throw new Error(`${(error as Error).message}\n${logs}`);
  }
  return cluster;
}
