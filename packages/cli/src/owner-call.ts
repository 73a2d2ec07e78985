import { randomBytes } from 'node:crypto';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { IdempotencyKey } from '@docket/contracts';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { UsageError, type CliContext } from './command.js';
import { callerToken, parseServiceUrl, serviceClient } from './service-client.js';
import { DEFAULT_SERVICE_PORTS } from './service-names.js';

/** Where owner commands (`approve`, `deny`, `signal`, `signals`) call when `--url` is not given. */
export const DEFAULT_ADMISSION_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.admission}`;

/** The subject of the admin token owner commands mint when there is no `--token` or `DOCKET_TOKEN`. */
export const OWNER_MINTED_SUBJECT = 'docket-cli';

/** A typed client of `docket.admission.v1.AdmissionService`. */
export type AdmissionClient = Client<typeof AdmissionService>;

/** The options every owner command takes. */
export interface OwnerOptions {
  readonly url: string;
  readonly token: string | undefined;
  /** The caller's `--key`; `undefined` means one is generated (and printed) for the call. */
  readonly key: string | undefined;
}

/** The help lines of {@link OwnerOptions}, for each command's help text. */
export const OWNER_OPTIONS_HELP = `  --key <key>     the request's idempotency key, 16 to 128 characters of
                  [A-Za-z0-9._~-]; repeat a request with the same key to
                  retry it safely (the first answer is replayed). Without
                  it a key is generated and printed to standard error
  --url <url>     the admission service (default ${DEFAULT_ADMISSION_URL})
  --token <jwt>   bearer token of the job's owner or an admin (default:
                  DOCKET_TOKEN, else an admin token minted with
                  DOCKET_AUTH_SECRET or docket dev's secret)`;

/** The `parseArgs` options of {@link OwnerOptions}. */
const OWNER_FLAGS = { url: { type: 'string' }, token: { type: 'string' }, key: { type: 'string' } } as const;

/**
 * Parses `args` with the owner flags plus `flags`; every problem is a
 * UsageError. A bad `--key` is refused without echoing it.
 */
export function parseOwnerArguments<F extends NonNullable<ParseArgsConfig['options']>>(
  args: readonly string[],
  flags: F,
): { positionals: string[]; values: Record<string, string | boolean | undefined>; owner: OwnerOptions } {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: { ...OWNER_FLAGS, ...flags }, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const url = parseServiceUrl(typeof values['url'] === 'string' ? values['url'] : DEFAULT_ADMISSION_URL, '--url');
  const token = values['token'] as string | undefined;
  if (token === '') throw new UsageError('--token must not be empty');
  const key = values['key'] as string | undefined;
  if (key !== undefined) {
    try {
      new IdempotencyKey(key);
    } catch {
      throw new UsageError('--key must be 16 to 128 characters of [A-Za-z0-9._~-]');
    }
  }
  return { positionals: parsed.positionals, values, owner: { url, token, key } };
}

/** A fresh idempotency key: `cli-` and 144 random bits (28 characters of [A-Za-z0-9_-]). */
export function generateIdempotencyKey(): string {
  return `cli-${randomBytes(18).toString('base64url')}`;
}

/**
 * The key for one request: the caller's `--key`, never printed, or a
 * generated one, printed to standard error before the request is sent so
 * that a request whose answer was lost can be retried with it.
 */
export function requestKey(command: string, owner: OwnerOptions, context: CliContext): string {
  if (owner.key !== undefined) return owner.key;
  const key = generateIdempotencyKey();
  context.err(`docket ${command}: idempotency key ${key} (to retry this request, repeat it with --key ${key})\n`);
  return key;
}

/** The admission client for `owner`, with its token (see `callerToken`). */
export async function admissionClient(owner: OwnerOptions, context: CliContext): Promise<AdmissionClient> {
  return serviceClient(AdmissionService, owner.url, owner.token ?? (await callerToken(context, OWNER_MINTED_SUBJECT)));
}

/**
 * Runs `call` and resolves to the exit code: its own, or 1 after printing
 * a failed call as `docket <command>: <code> <REASON>: <message>` (the
 * gRPC code as gRPC tools spell it, lowercase, and the ErrorInfo reason;
 * for example `already_exists APPROVAL_SPENT`), with a hint for an
 * unreachable service or a refused token.
 */
export async function reportingFailures(command: string, owner: OwnerOptions, context: CliContext, call: () => Promise<number>): Promise<number> {
  try {
    return await call();
  } catch (error) {
    context.err(`docket ${command}: ${describeCallFailure(error, owner.url)}\n`);
    return 1;
  }
}

/** One line for a failed call (see {@link reportingFailures}). */
export function describeCallFailure(error: unknown, url: string): string {
  if (!(error instanceof ConnectError)) return error instanceof Error ? error.message : String(error);
  const reason = error.findDetails(ErrorInfoSchema)[0]?.reason;
  const head = `${codeName(error.code)}${reason === undefined ? '' : ` ${reason}`}`;
  const message = error.rawMessage === '' ? '' : `: ${error.rawMessage}`;
  switch (error.code) {
    case Code.Unavailable:
      return `${head}${message} (is the admission service listening at ${url}?)`;
    case Code.Unauthenticated:
      return `${head}${message} (pass --token, set DOCKET_TOKEN, or check DOCKET_AUTH_SECRET)`;
    case Code.PermissionDenied:
      return `${head}${message} (use a user or admin token)`;
    default:
      return `${head}${message}`;
  }
}

/** `already_exists` for `Code.AlreadyExists`: the name gRPC tools print. */
function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}
