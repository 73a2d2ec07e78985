import type pg from 'pg';
import type { ClusterShape, DocketServices } from './docket-services.js';
import { openSql } from './sql.js';

/** A cluster and a direct connection to its database. */
export interface ClusterWithSql<Cluster extends DocketServices> {
  readonly cluster: Cluster;
  /** For what the API does not show, and damage no API allows (see {@link openSql}). */
  readonly sql: pg.Client;
}

/** What {@link startClusterWithSql} started and {@link stopClustersWithSql} has not stopped yet. */
const running = new Set<ClusterWithSql<DocketServices>>();

/**
 * Starts a cluster with `start` (`startCluster` for processes,
 * `startInProcessCluster` in this process) as `shape` says (database,
 * replicas, environment), and opens a direct connection to its database.
 * {@link stopClustersWithSql} ends the connection, then stops the cluster;
 * if the connection cannot be opened, the cluster is stopped before the
 * error is thrown.
 */
export async function startClusterWithSql<Shape extends ClusterShape, Cluster extends DocketServices>(
  start: (shape: Shape) => Promise<Cluster>,
  shape: Shape,
): Promise<ClusterWithSql<Cluster>> {
  const cluster = await start(shape);
  try {
    const started = { cluster, sql: await openSql(cluster.databaseUrl) };
    running.add(started);
    return started;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Ends the connection and stops the cluster of everything {@link startClusterWithSql} started in this file; meant for `afterAll`. */
export async function stopClustersWithSql(): Promise<void> {
  const stopping = [...running];
  running.clear();
  await Promise.all(
    stopping.map(async ({ cluster, sql }) => {
      await sql.end();
      await cluster.stop();
    }),
  );
}
