import { Counter, Gauge, Histogram } from 'prom-client';
import type pg from 'pg';
import { ServiceMetrics } from '@docket/service-kit';
import type { ChangeListenerHub } from './db/change-listener.js';
import type { WritePath } from './batched-writes.js';

/** The statuses a job is still on its way through (counted on every scrape; ended jobs are not). */
const OPEN_STATUSES = ['WAITING', 'QUEUED', 'RUNNING', 'PAUSED', 'RETRY_WAIT', 'CANCELLING'];

/** The state service's metrics, beyond every service's RPC metrics. */
export interface StateMetrics {
  readonly service: ServiceMetrics;
  /** Items per group-committed transaction, by write path. */
  observeBatch(path: WritePath, size: number): void;
  /** Items one maintenance step handled (settled leases, re-queued retries, swept records, ...), by task. */
  countMaintenance(task: string, handled: number): void;
  /** One job newly quarantined, by the task that met it (a maintenance task or CLAIM_JOBS). */
  countQuarantined(task: string): void;
}

/**
 * Registers, on the state service's registry: `docket_jobs{queue,status}`
 * (jobs not yet ended, counted by one grouped query per scrape),
 * `docket_db_pool_connections{state}` (total, idle, waiting clients of the
 * pool), `docket_state_batch_size{path}` and
 * `docket_maintenance_handled_total{task}` (reaper settlements as
 * SETTLE_EXPIRED_ATTEMPTS, retries as REQUEUE_DUE_RETRIES, and so on) and
 * `docket_jobs_quarantined_total{task}` (jobs that this process found it
 * could not settle and quarantined, by the task that met them), and
 * `docket_state_change_watchers` (the WatchJob and WatchChanges streams
 * open on this process, each one watcher of its LISTEN connection: an
 * events process holds one whatever its number of subscribers).
 */
export function createStateMetrics(pool: pg.Pool, changes: ChangeListenerHub): StateMetrics {
  const service = new ServiceMetrics('state');
  const registers = [service.registry];
  new Gauge({
    name: 'docket_jobs',
    help: 'Jobs not yet ended, by queue and status',
    labelNames: ['queue', 'status'],
    registers,
    async collect() {
      this.reset();
      const { rows } = await pool.query<{ queue: string; status: string; n: bigint }>(
        'select queue, status, count(*) as n from jobs where status = any($1) group by queue, status',
        [OPEN_STATUSES],
      );
      for (const row of rows) this.set({ queue: row.queue, status: row.status }, Number(row.n));
    },
  });
  new Gauge({
    name: 'docket_db_pool_connections',
    help: 'Clients of the state service database pool, by state',
    labelNames: ['state'],
    registers,
    collect() {
      this.set({ state: 'total' }, pool.totalCount);
      this.set({ state: 'idle' }, pool.idleCount);
      this.set({ state: 'waiting' }, pool.waitingCount);
    },
  });
  new Gauge({
    name: 'docket_state_change_watchers',
    help: 'WatchJob and WatchChanges streams open on this state process',
    registers,
    collect() {
      this.set(changes.watcherCount);
    },
  });
  const batches = new Histogram({
    name: 'docket_state_batch_size',
    help: 'Items per group-committed transaction, by write path',
    labelNames: ['path'],
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers,
  });
  const maintenance = new Counter({ name: 'docket_maintenance_handled_total', help: 'Items handled by background steps, by task', labelNames: ['task'], registers });
  const quarantined = new Counter({ name: 'docket_jobs_quarantined_total', help: 'Jobs quarantined because they could not be settled, by the task that met them', labelNames: ['task'], registers });
  return {
    service,
    observeBatch: (path, size) => batches.observe({ path }, size),
    countMaintenance: (task, handled) => {
      if (handled > 0) maintenance.inc({ task }, handled);
    },
    countQuarantined: (task) => quarantined.inc({ task }),
  };
}
