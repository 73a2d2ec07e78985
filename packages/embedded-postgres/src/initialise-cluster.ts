import { readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { EmbeddedPostgresError } from './embedded-postgres-error.js';
import type { LogTail } from './log-tail.js';
import type { OsIdentity } from './os-identity.js';
import { describeExit, spawnPostgresProgram } from './postgres-program.js';

/** Options for {@link initialiseCluster}. */
export interface InitialiseClusterOptions {
  readonly initdb: string;
  readonly clusterDir: string;
  readonly passwordFile: string;
  readonly identity: OsIdentity | undefined;
  readonly log: LogTail;
  /** false skips initdb's fsync: fine for a throw-away test cluster. */
  readonly durable: boolean;
}

/**
 * Runs `initdb` into a staging folder and renames it to `clusterDir` only on
 * success, so a crash mid-initialisation never leaves a half-made cluster
 * that a later start would mistake for a real one. If another process
 * finished initialising `clusterDir` first, its cluster is kept.
 *
 * The cluster has superuser `postgres` authenticated by `scram-sha-256` (the
 * password from `passwordFile`), UTF-8 encoding and the C locale: byte-order
 * collation, identical on every machine.
 */
export async function initialiseCluster(options: InitialiseClusterOptions): Promise<void> {
  await removeAbandonedStaging(options.clusterDir);
  const staging = `${options.clusterDir}${STAGING_INFIX}${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  const args = [
    `--pgdata=${staging}`,
    '--username=postgres',
    '--auth=scram-sha-256',
    `--pwfile=${options.passwordFile}`,
    '--encoding=UTF8',
    '--no-locale',
    '--no-instructions',
  ];
  if (!options.durable) args.push('--no-sync');
  const program = spawnPostgresProgram(options.initdb, args, {
    identity: options.identity,
    onLine: (line) => options.log.push(line),
    cwd: dirname(options.clusterDir),
    detached: false,
  });
  const exit = await program.exited;
  if (exit.code !== 0) {
    await rm(staging, { recursive: true, force: true });
    throw new EmbeddedPostgresError(
      `initdb failed (${describeExit(exit)}) for ${options.clusterDir}`,
      options.log.lines(),
    );
  }
  try {
    await rename(staging, options.clusterDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    await rm(staging, { recursive: true, force: true }); // another process won the race
  }
}

const STAGING_INFIX = '.init-';

/** Deletes staging folders left by initialisations whose process has died. */
async function removeAbandonedStaging(clusterDir: string): Promise<void> {
  const prefix = `${basename(clusterDir)}${STAGING_INFIX}`;
  for (const entry of await readdir(dirname(clusterDir))) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number.parseInt(entry.slice(prefix.length), 10);
    if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) continue;
    await rm(join(dirname(clusterDir), entry), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
