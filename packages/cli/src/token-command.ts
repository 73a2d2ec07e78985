import { isRole, MAX_GRANTED_QUEUES, mintToken, ROLES, SERVICE_AUDIENCE } from '@docket/auth';
import { resolveAuthSecret } from './auth-secret.js';
import { UsageError, parseCommandArgs, type Command } from './command.js';

/** A token's lifetime when `--ttl` is not given: one day. */
export const DEFAULT_TOKEN_TTL_SECONDS = 86_400;
/** The longest lifetime `--ttl` accepts: one year. */
const MAX_TOKEN_TTL_SECONDS = 365 * 86_400;
/** The longest lifetime of a `service` token: one hour (the services mint their own, for minutes). */
const MAX_SERVICE_TOKEN_TTL_SECONDS = 3_600;

/**
 * `docket token --subject S --role R [--ttl SECONDS] [--queue Q ...] [--allow-service]`:
 * prints a bearer JWT signed with `DOCKET_AUTH_SECRET`, or with the secret
 * `docket dev` keeps in `<data dir>/secrets.json`. Every token expires; a
 * `service` token (which the state service trusts to name any subject) is
 * minted only when asked for explicitly, with the state service's own
 * secret, and for at most an hour.
 */
export const tokenCommand: Command = {
  name: 'token',
  summary: 'mint a bearer token (JWT) for a subject and role',
  help: `Usage: docket token --subject <subject> --role <${ROLES.join('|')}> [--ttl <seconds>]
                    [--queue <queue> ...] [--allow-service]

Prints an HS256 bearer token with claims sub, role, iat and exp, for the
authorization header: "authorization: Bearer <token>".

Options:
  --subject <s>   the caller's identity (JWT sub), 1 to 256 characters
  --role <r>      one of ${ROLES.join(', ')}
  --ttl <n>       lifetime in seconds, at most one year (default 86400:
                  one day); every token expires. A service token lives
                  at most 3600 seconds (the default for it)
  --queue <q>     with --role worker: a queue the worker may serve; repeat
                  for more (at most ${MAX_GRANTED_QUEUES}). A worker registering any
                  other queue is refused (permission_denied); without
                  --queue it may serve any queue
  --allow-service needed with --role service: a service token lets its
                  holder act for any subject towards the state service,
                  so it is never minted by accident; it lives at most an
                  hour and is signed with the state service's own secret

The secret is DOCKET_AUTH_SECRET (for --role service:
DOCKET_SERVICE_AUTH_SECRET) if set, otherwise the one docket dev keeps in
<data dir>/secrets.json (DOCKET_DATA_DIR, default .docket).
`,
  async run(args, context) {
    const { values } = parseOrUsage(args);
    const subject = values.subject;
    if (subject === undefined || subject.length === 0 || subject.length > 256) {
      throw new UsageError('--subject is required (1 to 256 characters)');
    }
    if (!isRole(values.role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
    if (values.role === 'service' && values['allow-service'] !== true) {
      throw new UsageError('--role service needs --allow-service: a service token can act for any subject');
    }
    const service = values.role === 'service';
    const maxTtl = service ? MAX_SERVICE_TOKEN_TTL_SECONDS : MAX_TOKEN_TTL_SECONDS;
    let ttlSeconds = service ? MAX_SERVICE_TOKEN_TTL_SECONDS : DEFAULT_TOKEN_TTL_SECONDS;
    if (values.ttl !== undefined) {
      ttlSeconds = Number(values.ttl);
      if (!/^\d+$/.test(values.ttl) || !Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > maxTtl) {
        throw new UsageError(`--ttl must be a positive whole number of seconds, at most ${maxTtl}`);
      }
    }
    const queues = values.queue;
    if (queues !== undefined) {
      if (values.role !== 'worker') throw new UsageError('--queue is for --role worker only');
      if (queues.length > MAX_GRANTED_QUEUES || queues.some((queue) => queue.length === 0 || queue.length > 128)) {
        throw new UsageError(`--queue takes 1 to ${MAX_GRANTED_QUEUES} queue names of 1 to 128 characters`);
      }
    }
    const secret = await resolveAuthSecret(context.env, context.cwd, service ? 'service' : 'public');
    const token = await mintToken({
      secret,
      subject,
      role: values.role,
      ttlSeconds,
      ...(service ? { audience: SERVICE_AUDIENCE } : {}),
      ...(queues === undefined ? {} : { queues }),
    });
    context.out(`${token}\n`);
    return 0;
  },
};

function parseOrUsage(args: readonly string[]) {
  const flags = {
    subject: { type: 'string' },
    role: { type: 'string' },
    ttl: { type: 'string' },
    queue: { type: 'string', multiple: true },
    'allow-service': { type: 'boolean' },
  } as const;
  return parseCommandArgs(args, flags, 'none');
}
