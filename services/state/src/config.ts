import { join } from 'node:path';
import type { BatchedWriteSettings } from './batched-writes.js';
import type { DatabasePooling } from './db/pool.js';
import { readListenAddress, readPositiveInteger, readShutdownGraceMs, requireSecret, type Environment } from '@docket/service-kit';

/** The state service's configuration, read from the environment only. */
export interface StateConfig {
  readonly listen: { readonly host: string; readonly port: number };
  /** External Postgres; undefined means embedded Postgres under dataDir. */
  readonly databaseUrl: string | undefined;
  /** Where the approval history lives; undefined means the state database (its own schema and owner). */
  readonly approvalDatabaseUrl: string | undefined;
  /** What sits between the service and PostgreSQL (DOCKET_DATABASE_POOLING: `session`, the default, or `transaction`). */
  readonly pooling: DatabasePooling;
  /**
   * A direct connection to the same database, not through a transaction
   * pooler, for LISTEN and the migrations' session lock
   * (DOCKET_DIRECT_DATABASE_URL); required with `transaction` pooling,
   * otherwise DOCKET_DATABASE_URL serves.
   */
  readonly directDatabaseUrl: string | undefined;
  readonly dataDir: string;
  /** Verifies the front services' tokens (`DOCKET_SERVICE_AUTH_SECRET`); public tokens are never signed with it. */
  readonly serviceAuthSecret: string;
  readonly maxConnections: number;
  readonly shutdownGraceMs: number;
  /** How long a claim or renewal leases a job (DOCKET_LEASE_MS, default 30 s). */
  readonly leaseMs: number;
  /** How concurrent writes are grouped into transactions. */
  readonly batching: BatchedWriteSettings;
  /**
   * Where this replica keeps the WAL positions it acknowledged, to notice a
   * failover that lost them across its own restarts
   * (DOCKET_STATE_WATERMARK_FILE; by default `state-watermark.json` in the
   * data dir when the state service runs the embedded database there, else
   * none: the positions are then kept in memory only). One file per replica.
   */
  readonly watermarkFile: string | undefined;
}

/** Default port of the state service (SPEC section 12). */
export const STATE_DEFAULT_PORT = 7404;

/**
 * Reads DOCKET_LISTEN, DOCKET_DATABASE_URL, DOCKET_APPROVAL_DATABASE_URL,
 * DOCKET_DATABASE_POOLING, DOCKET_DIRECT_DATABASE_URL, DOCKET_DATA_DIR,
 * DOCKET_SERVICE_AUTH_SECRET, DOCKET_DB_POOL_SIZE, DOCKET_SHUTDOWN_GRACE_MS,
 * DOCKET_LEASE_MS and the batching settings (DOCKET_ADMIT_BATCH_MAX,
 * DOCKET_ADMIT_BATCHES_IN_FLIGHT, DOCKET_CLAIM_BATCH_MAX,
 * DOCKET_REPORT_BATCH_MAX, DOCKET_WORKER_BATCHES_IN_FLIGHT) and
 * DOCKET_STATE_WATERMARK_FILE. The settings claims and reports had each
 * before they shared transactions are refused, with the one that replaced
 * them named, rather than ignored.
 */
export function readStateConfig(env: Environment): StateConfig {
  for (const replaced of ['DOCKET_CLAIM_BATCHES_IN_FLIGHT', 'DOCKET_REPORT_BATCHES_IN_FLIGHT']) {
    if (env[replaced] !== undefined) throw new Error(`${replaced} is replaced by DOCKET_WORKER_BATCHES_IN_FLIGHT: claims and reports share transactions`);
  }
  const pooling = env['DOCKET_DATABASE_POOLING'] || 'session';
  if (pooling !== 'session' && pooling !== 'transaction') {
    throw new Error(`DOCKET_DATABASE_POOLING must be session or transaction, got ${JSON.stringify(pooling)}`);
  }
  const directDatabaseUrl = env['DOCKET_DIRECT_DATABASE_URL'] || undefined;
  if (pooling === 'transaction' && (!env['DOCKET_DATABASE_URL'] || !directDatabaseUrl)) {
    throw new Error('DOCKET_DATABASE_POOLING=transaction needs DOCKET_DATABASE_URL (the pooler) and DOCKET_DIRECT_DATABASE_URL (PostgreSQL itself, for LISTEN and migrations)');
  }
  const databaseUrl = env['DOCKET_DATABASE_URL'] || undefined;
  const dataDir = env['DOCKET_DATA_DIR'] || '.docket';
  return {
    listen: readListenAddress(env, STATE_DEFAULT_PORT),
    databaseUrl,
    approvalDatabaseUrl: env['DOCKET_APPROVAL_DATABASE_URL'] || undefined,
    pooling,
    directDatabaseUrl,
    dataDir,
    serviceAuthSecret: requireSecret(env, 'DOCKET_SERVICE_AUTH_SECRET'),
    maxConnections: readPositiveInteger(env, 'DOCKET_DB_POOL_SIZE', 10),
    shutdownGraceMs: readShutdownGraceMs(env),
    leaseMs: readPositiveInteger(env, 'DOCKET_LEASE_MS', 30_000),
    batching: {
      admitBatchMax: readPositiveInteger(env, 'DOCKET_ADMIT_BATCH_MAX', 128),
      admitBatchesInFlight: readPositiveInteger(env, 'DOCKET_ADMIT_BATCHES_IN_FLIGHT', 2),
      claimBatchMax: readPositiveInteger(env, 'DOCKET_CLAIM_BATCH_MAX', 32),
      reportBatchMax: readPositiveInteger(env, 'DOCKET_REPORT_BATCH_MAX', 128),
      workerBatchesInFlight: readPositiveInteger(env, 'DOCKET_WORKER_BATCHES_IN_FLIGHT', 2),
    },
    watermarkFile: env['DOCKET_STATE_WATERMARK_FILE'] || (databaseUrl === undefined ? join(dataDir, 'state-watermark.json') : undefined),
  };
}
