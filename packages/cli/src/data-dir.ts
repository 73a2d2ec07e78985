import { resolve } from 'node:path';

/**
 * The local data directory: `DOCKET_DATA_DIR`, or `.docket` in the working
 * directory. It holds `postgres/` (the embedded cluster), `secrets.json` and
 * `logs/`.
 */
export function resolveDataDir(env: NodeJS.ProcessEnv, cwd: string): string {
  const configured = env['DOCKET_DATA_DIR'];
  return resolve(cwd, configured !== undefined && configured !== '' ? configured : '.docket');
}
