import { mintToken } from '@docket/auth';
import type { TokenSource } from '@docket/worker-sdk';
import { resolveAuthSecret } from './auth-secret.js';
import type { CliContext } from './command.js';

/** The subject of the worker token `docket worker` mints when given none: the one `docket dev`'s printed worker token has. */
export const MINTED_WORKER_SUBJECT = 'dev-worker';

/** Lifetime of each minted token; a fresh one is minted this long before expiry. */
const MINTED_TTL_SECONDS = 3_600;
const REMINT_BEFORE_MS = 5 * 60_000;

/**
 * The worker's bearer token: `--token`, else `DOCKET_WORKER_TOKEN`, else a
 * worker token for subject {@link MINTED_WORKER_SUBJECT} signed with
 * `DOCKET_AUTH_SECRET` or `docket dev`'s secret. A minted token lives an
 * hour and is replaced before it expires, so a worker can run for days
 * without holding a token that never expires.
 *
 * `DOCKET_TOKEN` is deliberately not read: `docket dev` tells users to
 * export the *user* token under that name, and a worker registering with
 * it would only be refused (PERMISSION_DENIED).
 */
export async function workerTokenSource(explicit: string | undefined, context: CliContext): Promise<TokenSource> {
  if (explicit !== undefined) return explicit;
  const fromEnv = context.env['DOCKET_WORKER_TOKEN'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const secret = await resolveAuthSecret(context.env, context.cwd);
  let current: { token: string; renewAt: number } | undefined;
  return async () => {
    if (!current || Date.now() >= current.renewAt) {
      const token = await mintToken({ secret, subject: MINTED_WORKER_SUBJECT, role: 'worker', ttlSeconds: MINTED_TTL_SECONDS });
      current = { token, renewAt: Date.now() + MINTED_TTL_SECONDS * 1_000 - REMINT_BEFORE_MS };
    }
    return current.token;
  };
}
