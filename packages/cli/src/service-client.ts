import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Client } from '@connectrpc/connect';
import { createServiceConnection } from '@docket/client-kit/node';
import { mintToken } from '@docket/auth';
import { resolveAuthSecret } from './auth-secret.js';
import { UsageError, type CliContext } from './command.js';

/** Lifetime of a token the CLI mints for one command: long enough for any command, short enough not to matter if it leaks. */
const MINTED_TTL_SECONDS = 3_600;

/**
 * A client of `service` at `baseUrl` over gRPC (h2c for `http://`, TLS for
 * `https://`) that presents `token` as `authorization: Bearer <token>`.
 * One short-lived command, one connection: no pings, no pooling.
 */
export function serviceClient<T extends DescService>(service: T, baseUrl: string, token: string): Client<T> {
  return createClient(service, createServiceConnection({ baseUrl, token }).transport);
}

/**
 * The bearer token of a command acting for a user: `DOCKET_TOKEN` (the user
 * token `docket dev` prints), else an admin token for `subject`, valid an
 * hour, signed with `DOCKET_AUTH_SECRET` or `docket dev`'s secret. Rejects,
 * naming both ways to provide one, when there is neither.
 */
export async function callerToken(context: CliContext, subject: string): Promise<string> {
  const fromEnv = context.env['DOCKET_TOKEN'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return mintToken({
    secret: await resolveAuthSecret(context.env, context.cwd),
    subject,
    role: 'admin',
    ttlSeconds: MINTED_TTL_SECONDS,
  });
}

/** `value` if it is an http:// or https:// URL; else a UsageError naming `flag`. */
export function parseServiceUrl(value: string, flag: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new UsageError(`${flag} must be an http:// or https:// URL`);
  return value;
}
