import { resolveDataDir } from './data-dir.js';
import { devSecretsPath, readDevSecrets } from './dev-secrets.js';

/** Which secret {@link resolveAuthSecret} finds: the public token secret, or the internal one of the state service. */
export type SigningSecret = 'public' | 'service';

const VARIABLE: Readonly<Record<SigningSecret, string>> = { public: 'DOCKET_AUTH_SECRET', service: 'DOCKET_SERVICE_AUTH_SECRET' };

/**
 * The HS256 secret a local system verifies tokens with: `DOCKET_AUTH_SECRET`
 * (for `service`: `DOCKET_SERVICE_AUTH_SECRET`), else the one `docket dev`
 * keeps in `<data dir>/secrets.json`. Rejects, naming both ways to provide
 * one, when there is neither.
 */
export async function resolveAuthSecret(env: NodeJS.ProcessEnv, cwd: string, which: SigningSecret = 'public'): Promise<string> {
  const variable = VARIABLE[which];
  const fromEnv = env[variable];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const dataDir = resolveDataDir(env, cwd);
  const secrets = await readDevSecrets(dataDir);
  const stored = which === 'public' ? secrets?.authSecret : secrets?.serviceAuthSecret;
  if (stored === undefined) {
    throw new Error(`no signing secret: set ${variable}, or run docket dev once to create ${devSecretsPath(dataDir)}`);
  }
  return stored;
}
