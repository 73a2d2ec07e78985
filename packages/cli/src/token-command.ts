import { parseArgs } from 'node:util';
import { isRole, mintToken, ROLES } from '@docket/auth';
import { resolveAuthSecret } from './auth-secret.js';
import { UsageError, type Command } from './command.js';

/**
 * `docket token --subject S --role R [--ttl SECONDS]`: prints a bearer JWT
 * signed with `DOCKET_AUTH_SECRET`, or with the secret `docket dev` keeps
 * in `<data dir>/secrets.json`.
 */
export const tokenCommand: Command = {
  name: 'token',
  summary: 'mint a bearer token (JWT) for a subject and role',
  help: `Usage: docket token --subject <subject> --role <${ROLES.join('|')}> [--ttl <seconds>]

Prints an HS256 bearer token with claims sub and role, for the
authorization header: "authorization: Bearer <token>".

Options:
  --subject <s>   the caller's identity (JWT sub), 1 to 256 characters
  --role <r>      one of ${ROLES.join(', ')}
  --ttl <n>       lifetime in seconds (default: never expires)

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
    let ttlSeconds: number | undefined;
    if (values.ttl !== undefined) {
      ttlSeconds = Number(values.ttl);
      if (!/^\d+$/.test(values.ttl) || !Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) {
        throw new UsageError('--ttl must be a positive whole number of seconds');
      }
    }
    const secret = await resolveAuthSecret(context.env, context.cwd);
    const token = await mintToken({
      secret,
      subject,
      role: values.role,
      ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
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
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
