import { toJsonString, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import { createClient, isDocketClientError, type DocketClient } from '@docket/client';
import type { CliContext } from './command.js';
import { OWNER_MINTED_SUBJECT, codeName, describeCallFailure, type AdmissionOptions } from './owner-call.js';
import { callerToken, parseServiceUrl } from './service-client.js';
import { DEFAULT_EVENTS_URL } from './verify-command.js';

/** The `--events-url` help line of the commands that read a job's journal (`docket watch`). */
export const EVENTS_URL_OPTION_HELP = `  --events-url <url>  the events service (default ${DEFAULT_EVENTS_URL})`;

/** `--events-url`, for `parseAdmissionArguments`. */
export const EVENTS_URL_FLAG = { 'events-url': { type: 'string' } } as const;

/** Where a command of the client SDK calls: the admission service and, for journals, the events service. */
export interface JobClientOptions extends AdmissionOptions {
  /** The events service; only commands that read journals call it (default {@link DEFAULT_EVENTS_URL}). */
  readonly eventsUrl?: string;
}

/** The `--events-url` value of parsed arguments (the default when absent); a UsageError unless http(s). */
export function eventsUrlOf(values: Record<string, string | boolean | undefined>): string {
  const value = values['events-url'];
  return parseServiceUrl(typeof value === 'string' ? value : DEFAULT_EVENTS_URL, '--events-url');
}

/**
 * A `@docket/client` client for one command: admission at `options.url`,
 * events at `options.eventsUrl` (connected only when called), with `--token`, else `DOCKET_TOKEN`, else
 * the admin token owner commands mint (see `callerToken`). The SDK retries
 * a call only when it may have succeeded, always with the same key.
 */
export async function jobClient(options: JobClientOptions, context: CliContext): Promise<DocketClient> {
  const token = options.token ?? (await callerToken(context, OWNER_MINTED_SUBJECT));
  return createClient({ admissionUrl: options.url, eventsUrl: options.eventsUrl ?? DEFAULT_EVENTS_URL, token });
}

/** Runs `use` with a {@link jobClient} and closes the client's connections after it, whatever the outcome. */
export async function withJobClient(options: JobClientOptions, context: CliContext, use: (client: DocketClient) => Promise<number>): Promise<number> {
  const client = await jobClient(options, context);
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

/** The service a failed call went to, named in the hint for an unreachable one. */
export interface CalledService {
  readonly name: 'admission' | 'events';
  readonly url: string;
}

/**
 * Runs `call` and resolves to its exit code, or to 1 after printing what
 * the SDK threw as `docket <command>: <code> <REASON>: <message>`, the way
 * the owner commands print a refusal (for example `not_found NOT_FOUND:
 * ...`), with the hint for an unreachable `service` or a refused token.
 */
export async function reportingClientFailures(command: string, service: CalledService, context: CliContext, call: () => Promise<number>): Promise<number> {
  try {
    return await call();
  } catch (error) {
    context.err(`docket ${command}: ${describeClientFailure(error, service)}\n`);
    return 1;
  }
}

/**
 * One line for what a `@docket/client` call threw. A refusal from a
 * service reads as the owner commands print it (`describeCallFailure` of
 * the ConnectError underneath); an error the SDK raised itself, such as
 * its own hash-chain check (`data_loss JOURNAL_CORRUPT`), names its code
 * and reason before the SDK's message.
 */
export function describeClientFailure(error: unknown, service: CalledService): string {
  if (!isDocketClientError(error)) return describeCallFailure(error, service.url);
  if (error.cause instanceof ConnectError) {
    return describeCallFailure(error.cause, service.url).replace('(is the admission service listening', `(is the ${service.name} service listening`);
  }
  return `${codeName(error.code)}${error.reason === undefined ? '' : ` ${error.reason}`}: ${error.message}`;
}

/** `message` as one line of proto3 JSON (field names in lowerCamelCase, enums by name, 64-bit integers as strings). */
export function protoJsonLine<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): string {
  return `${toJsonString(schema, message)}\n`;
}
