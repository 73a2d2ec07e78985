import { randomBytes } from 'node:crypto';
import type { ParseArgsConfig } from 'node:util';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { IdempotencyKey } from '@docket/contracts';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { UsageError, parseCommandArgs, soleArgument, type CliContext, type Command } from './command.js';
import { callerToken, parseServiceUrl, serviceClient } from './service-client.js';
import { DEFAULT_SERVICE_PORTS } from './service-names.js';

/** Where the commands that call the admission service (`approve`, `signal`, `delete`, `hold`, ...) call when `--url` is not given. */
export const DEFAULT_ADMISSION_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.admission}`;

/** The subject of the admin token owner commands mint when there is no `--token` or `DOCKET_TOKEN`. */
export const OWNER_MINTED_SUBJECT = 'docket-cli';

/** A typed client of `docket.admission.v1.AdmissionService`. */
export type AdmissionClient = Client<typeof AdmissionService>;

/** Where a command calls the admission service, and with which token. */
export interface AdmissionOptions {
  readonly url: string;
  /** The caller's `--token`; `undefined` means the fallback of `callerToken`. */
  readonly token: string | undefined;
}

/** The options every owner command (one idempotent request) takes. */
export interface OwnerOptions extends AdmissionOptions {
  /** The caller's `--key`; `undefined` means one is generated (and printed) for the call. */
  readonly key: string | undefined;
}

/**
 * Whose token a call needs: `owner` calls take the job owner's or an
 * admin's, `admin` calls (legal hold, retention) an admin's only. Chooses
 * the `--token` help and the hint printed with PERMISSION_DENIED.
 */
export type CallerRole = 'owner' | 'admin';

const KEY_OPTION_HELP = `  --key <key>     the request's idempotency key, 16 to 128 characters of
                  [A-Za-z0-9._~-]; repeat a request with the same key to
                  retry it safely (the first answer is replayed). Without
                  it a key is generated and printed to standard error`;

const TOKEN_OPTION_HELP: Readonly<Record<CallerRole, string>> = {
  owner: `  --token <jwt>   bearer token of the job's owner or an admin (default:
                  DOCKET_TOKEN, else an admin token minted with
                  DOCKET_AUTH_SECRET or docket dev's secret)`,
  admin: `  --token <jwt>   bearer token of an admin (default: DOCKET_TOKEN, else an
                  admin token minted with DOCKET_AUTH_SECRET or docket
                  dev's secret; the user token docket dev prints for
                  DOCKET_TOKEN is refused)`,
};

/** The `--url` and `--token` help lines of {@link AdmissionOptions}, for commands without `--key`. */
export function admissionOptionsHelp(caller: CallerRole): string {
  return `  --url <url>     the admission service (default ${DEFAULT_ADMISSION_URL})\n${TOKEN_OPTION_HELP[caller]}`;
}

/** The help lines of {@link OwnerOptions}, for each owner command's help text. */
export const OWNER_OPTIONS_HELP = `${KEY_OPTION_HELP}\n${admissionOptionsHelp('owner')}`;

/**
 * The end of the help text of an owner command that answers as
 * {@link ownerRequest} does: its options (`options`, its own help lines,
 * then {@link OWNER_OPTIONS_HELP}) and its exit status: 0 `done` (a replay
 * too), 1 refused or failed, 2 bad arguments.
 */
export function ownerHelpFooter(done: string, options?: string): string {
  return `Options:
${options === undefined ? '' : `${options}\n`}${OWNER_OPTIONS_HELP}

Exit status: 0 ${done} (or replayed), 1 refused or failed (the gRPC code
and reason are printed), 2 bad arguments.
`;
}

/** The `parseArgs` options of {@link AdmissionOptions}. */
const ADMISSION_FLAGS = { url: { type: 'string' }, token: { type: 'string' } } as const;

/**
 * Parses `args` with `--url` and `--token` plus `flags`; every problem is
 * a UsageError. For commands that send no idempotency key (reads, and
 * admin calls that are idempotent by their content).
 */
export function parseAdmissionArguments<F extends NonNullable<ParseArgsConfig['options']>>(
  args: readonly string[],
  flags: F,
): { positionals: string[]; values: Record<string, string | boolean | undefined>; call: AdmissionOptions } {
  const parsed = parseCommandArgs(args, { ...ADMISSION_FLAGS, ...flags }, 'any');
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const url = parseServiceUrl(typeof values['url'] === 'string' ? values['url'] : DEFAULT_ADMISSION_URL, '--url');
  const token = values['token'] as string | undefined;
  if (token === '') throw new UsageError('--token must not be empty');
  return { positionals: parsed.positionals, values, call: { url, token } };
}

/**
 * Parses `args` with the owner flags (`--key`, `--url`, `--token`) plus
 * `flags`; every problem is a UsageError. A bad `--key` is refused without
 * echoing it.
 */
export function parseOwnerArguments<F extends NonNullable<ParseArgsConfig['options']>>(
  args: readonly string[],
  flags: F,
): { positionals: string[]; values: Record<string, string | boolean | undefined>; owner: OwnerOptions } {
  const { positionals, values, call } = parseAdmissionArguments(args, { key: { type: 'string' }, ...flags });
  const key = values['key'] as string | undefined;
  if (key !== undefined) {
    try {
      new IdempotencyKey(key);
    } catch {
      throw new UsageError('--key must be 16 to 128 characters of [A-Za-z0-9._~-]');
    }
  }
  return { positionals, values, owner: { ...call, key } };
}

/** The one `<job_id>` among `positionals`; a UsageError when it is missing, empty or not alone. */
export function soleJobId(positionals: readonly string[]): string {
  return soleArgument(positionals, 'a job id is required', 'job');
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

/**
 * What an output line adds when the service answered with the stored
 * response of an earlier request under the same key: nothing, or
 * ` (replayed: this key was used before)`.
 */
export function replayNote(replayed: boolean): string {
  return replayed ? ' (replayed: this key was used before)' : '';
}

/** The admission client for `call`, with its token (see `callerToken`). */
export async function admissionClient(call: AdmissionOptions, context: CliContext): Promise<AdmissionClient> {
  return serviceClient(AdmissionService, call.url, call.token ?? (await callerToken(context, OWNER_MINTED_SUBJECT)));
}

/** What {@link admissionCommand} makes a command of: its name and texts, how it reads its arguments, and its calls. */
export interface AdmissionCommandSpec<P> extends Omit<Command, 'run'> {
  /** Reads the command's arguments; a UsageError for anything wrong. */
  readonly parse: (args: readonly string[]) => P;
  /** Makes the command's calls with the admission client its arguments name; resolves to the exit code. */
  readonly call: (client: AdmissionClient, parsed: P, context: CliContext) => Promise<number>;
}

/**
 * A command that calls the admission service: it reads its arguments with
 * `parse`, then runs `call` with the client of the `--url` and `--token`
 * they hold (see {@link admissionClient}).
 */
export function admissionCommand<P extends { readonly owner: AdmissionOptions } | { readonly call: AdmissionOptions }>(spec: AdmissionCommandSpec<P>): Command {
  const { parse, call, ...command } = spec;
  return {
    ...command,
    async run(args, context) {
      const parsed = parse(args);
      return call(await admissionClient('owner' in parsed ? parsed.owner : parsed.call, context), parsed, context);
    },
  };
}

/**
 * One owner request and its answer: `send` makes the call under the
 * request's key (see {@link requestKey}), and the line `describe` makes of
 * the answer is printed with its {@link replayNote}. Resolves to the exit
 * code, reporting a failure as {@link reportingFailures} does.
 */
export async function ownerRequest<R extends { readonly replayed: boolean }>(
  command: string,
  owner: OwnerOptions,
  context: CliContext,
  send: (idempotencyKey: string) => Promise<R>,
  describe: (answer: R) => string,
): Promise<number> {
  return reportingFailures(command, owner, context, async () => {
    const answer = await send(requestKey(command, owner, context));
    context.out(`${describe(answer)}${replayNote(answer.replayed)}\n`);
    return 0;
  });
}

/**
 * Runs `call` and resolves to the exit code: its own, or 1 after printing
 * a failed call as `docket <command>: <code> <REASON>: <message>` (the
 * gRPC code as gRPC tools spell it, lowercase, and the ErrorInfo reason;
 * for example `already_exists APPROVAL_SPENT`), with a hint for an
 * unreachable service or a refused token (one that names an admin token
 * when `caller` is `admin`).
 */
export async function reportingFailures(
  command: string,
  options: AdmissionOptions,
  context: CliContext,
  call: () => Promise<number>,
  caller: CallerRole = 'owner',
): Promise<number> {
  try {
    return await call();
  } catch (error) {
    context.err(`docket ${command}: ${describeCallFailure(error, options.url, caller)}\n`);
    return 1;
  }
}

/** One line for a failed call (see {@link reportingFailures}). */
export function describeCallFailure(error: unknown, url: string, caller: CallerRole = 'owner'): string {
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
      return caller === 'admin'
        ? `${head}${message} (this needs an admin token: pass --token, or unset DOCKET_TOKEN to mint one)`
        : `${head}${message} (use a user or admin token)`;
    default:
      return `${head}${message}`;
  }
}

/** `already_exists` for `Code.AlreadyExists`: the name gRPC tools print. */
export function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}
