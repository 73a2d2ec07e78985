import { resolveDataDir } from './data-dir.js';
import { devSecretsPath, readDevSecrets } from './dev-secrets.js';

/**
 * The HS256 secret a local system verifies tokens with: `DOCKET_AUTH_SECRET`,
 * else the one `docket dev` keeps in `<data dir>/secrets.json`. Rejects,
 * naming both ways to provide one, when there is neither.
 */
export async function resolveAuthSecret(env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const fromEnv = env['DOCKET_AUTH_SECRET'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const dataDir = resolveDataDir(env, cwd);
  const secrets = await readDevSecrets(dataDir);
  if (!secrets) {
    throw new Error(
      `no signing secret: set DOCKET_AUTH_SECRET, or run docket dev once to create ${devSecretsPath(dataDir)}`,
    );
  }
  return secrets.authSecret;
}
