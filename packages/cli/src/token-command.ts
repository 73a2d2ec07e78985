import { parseArgs } from 'node:util';
import { isRole, mintToken, ROLES } from '@docket/auth';
import { resolveAuthSecret } from './auth-secret.js';
import { UsageError, type Command } from './command.js';

/** A token's lifetime when `--ttl` is not given: one day. */
export const DEFAULT_TOKEN_TTL_SECONDS = 86_400;
/** The longest lifetime `--ttl` accepts: one year. */
const MAX_TOKEN_TTL_SECONDS = 365 * 86_400;

/**
 * `docket token --subject S --role R [--ttl SECONDS] [--allow-service]`:
 * prints a bearer JWT signed with `DOCKET_AUTH_SECRET`, or with the secret
 * `docket dev` keeps in `<data dir>/secrets.json`. Every token expires; a
 * `service` token (which the state service trusts to name any subject) is
 * minted only when asked for explicitly.
 */
export const tokenCommand: Command = {
  name: 'token',
  summary: 'mint a bearer token (JWT) for a subject and role',
  help: `Usage: docket token --subject <subject> --role <${ROLES.join('|')}> [--ttl <seconds>] [--allow-service]

Prints an HS256 bearer token with claims sub and role, for the
authorization header: "authorization: Bearer <token>".

Options:
  --subject <s>   the caller's identity (JWT sub), 1 to 256 characters
  --role <r>      one of ${ROLES.join(', ')}
  --ttl <n>       lifetime in seconds, at most one year (default 86400:
                  one day); every token expires
  --allow-service needed with --role service: a service token lets its
                  holder act for any subject towards the state service,
                  so it is never minted by accident

The secret is DOCKET_AUTH_SECRET if set, otherwise the one docket dev keeps
in <data dir>/secrets.json (DOCKET_DATA_DIR, default .docket).
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
    let ttlSeconds = DEFAULT_TOKEN_TTL_SECONDS;
    if (values.ttl !== undefined) {
      ttlSeconds = Number(values.ttl);
      if (!/^\d+$/.test(values.ttl) || !Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
        throw new UsageError(`--ttl must be a positive whole number of seconds, at most ${MAX_TOKEN_TTL_SECONDS}`);
      }
    }
    const secret = await resolveAuthSecret(context.env, context.cwd);
    const token = await mintToken({
      secret,
      subject,
      role: values.role,
      ttlSeconds,
    });
    context.out(`${token}\n`);
    return 0;
  },
};

function parseOrUsage(args: readonly string[]) {
  try {
    return parseArgs({
      args: [...args],
      options: {
        subject: { type: 'string' },
        role: { type: 'string' },
        ttl: { type: 'string' },
        'allow-service': { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
