import { readFileSync } from 'node:fs';
import { publicKeySetFromJwks, weakSecretReason, type PublicKeySet, type TokenRules } from '@docket/auth';
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, isLogLevel, type LogLevel } from './logger.js';

/** The environment a service reads its configuration from. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Host used when `DOCKET_LISTEN` is unset or gives only `:port`. */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';

/**
 * The listen address from `DOCKET_LISTEN`: `host:port`, `[ipv6]:port` or
 * `:port` (host {@link DEFAULT_LISTEN_HOST}); unset or empty means
 * `127.0.0.1:<defaultPort>`. Port 0 asks the OS for a free port. Anything
 * else throws an error that names the variable and shows the expected form.
 */
export function readListenAddress(env: Environment, defaultPort: number): { host: string; port: number } {
  const value = env['DOCKET_LISTEN']?.trim();
  if (!value) return { host: DEFAULT_LISTEN_HOST, port: defaultPort };
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(value);
  const port = match?.[3] === undefined ? Number.NaN : Number(match[3]);
  if (!match || !Number.isInteger(port) || port > 65_535) {
    throw new Error(
      `DOCKET_LISTEN must be host:port, [ipv6]:port or :port with a port from 0 to 65535 (for example 0.0.0.0:${defaultPort}), got ${JSON.stringify(value)}`,
    );
  }
  return { host: match[1] ?? (match[2] || DEFAULT_LISTEN_HOST), port };
}

/** The value of a required variable; throws naming the variable when it is unset or empty. */
export function requireEnv(env: Environment, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new Error(`environment variable ${name} is required but not set`);
  }
  return value;
}

/**
 * A signing secret from a required variable: refused at start-up, naming
 * the variable but never showing the value, when it is too short or looks
 * like a placeholder copied from an example (`weakSecretReason`).
 */
export function requireSecret(env: Environment, name: string): string {
  const value = requireEnv(env, name);
  const weakness = weakSecretReason(value);
  if (weakness !== undefined) throw new Error(`${name} cannot be used: ${weakness} (generate one with: openssl rand -base64 32)`);
  return value;
}

/**
 * The external issuer's public keys from the JSON Web Key Set file that
 * `DOCKET_AUTH_JWKS_FILE` names, read once (at start-up), or undefined when
 * the variable is unset or empty. The file must be readable, be JSON, and
 * hold at least one public Ed25519 or RSA key with a `kid` and no private
 * or symmetric key material (`publicKeySetFromJwks`); otherwise this throws
 * an error that names the variable and what is wrong, but never shows the
 * file's content (not even a JSON parser's excerpt of it).
 */
export function readPublicKeySet(env: Environment): PublicKeySet | undefined {
  const name = 'DOCKET_AUTH_JWKS_FILE';
  const path = env[name]?.trim();
  if (!path) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`${name} names a file that cannot be read${typeof code === 'string' ? ` (${code})` : ''}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new Error(`${name} names a file that is not valid JSON; expected a JSON Web Key Set of public keys`);
  }
  try {
    return publicKeySetFromJwks(document);
  } catch (error) {
    if (error instanceof Error && error.name === 'UnusableKeySetError') throw new Error(`${name} cannot be used: the key set ${error.message}`);
    throw new Error(`${name} cannot be used: the key set is malformed`);
  }
}

/**
 * What public bearer tokens must carry beyond a signature and `exp`:
 * `DOCKET_AUTH_AUDIENCE` and `DOCKET_AUTH_ISSUER` when set, and the clock
 * skew tolerated, `DOCKET_AUTH_CLOCK_TOLERANCE_SECONDS` (default 30, at
 * most 300).
 */
export function readTokenRules(env: Environment): TokenRules {
  const tolerance = readPositiveInteger(env, 'DOCKET_AUTH_CLOCK_TOLERANCE_SECONDS', 30);
  if (tolerance > 300) throw new Error(`DOCKET_AUTH_CLOCK_TOLERANCE_SECONDS must be at most 300, got ${tolerance}`);
  const audience = env['DOCKET_AUTH_AUDIENCE']?.trim();
  const issuer = env['DOCKET_AUTH_ISSUER']?.trim();
  return {
    clockToleranceSeconds: tolerance,
    ...(audience ? { audience } : {}),
    ...(issuer ? { issuer } : {}),
  };
}

/**
 * A positive whole number from `env[name]`, or `fallback` when unset or
 * empty; anything else is a start-up error naming the variable.
 */
export function readPositiveInteger(env: Environment, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed <= 0) {
    throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(value)}`);
  }
  return parsed;
}

/**
 * A duration given in whole seconds by `env[name]` (`fallbackSeconds` when
 * unset or empty), in milliseconds; anything but a positive whole number is
 * a start-up error naming the variable (see {@link readPositiveInteger}).
 */
export function readSecondsAsMs(env: Environment, name: string, fallbackSeconds: number): number {
  return readPositiveInteger(env, name, fallbackSeconds) * 1000;
}

/** How long a draining service waits for in-flight calls: DOCKET_SHUTDOWN_GRACE_MS (default 10 s). */
export function readShutdownGraceMs(env: Environment): number {
  return readPositiveInteger(env, 'DOCKET_SHUTDOWN_GRACE_MS', 10_000);
}

/**
 * The least severe log level a service writes: `DOCKET_LOG_LEVEL`, one of
 * `debug`, `info`, `warn`, `error` (default `info`, at which successful
 * RPCs are not logged one by one; see docs/configuration.md).
 */
export function readLogLevel(env: Environment): LogLevel {
  const value = env['DOCKET_LOG_LEVEL'];
  if (value === undefined || value === '') return DEFAULT_LOG_LEVEL;
  if (!isLogLevel(value)) {
    throw new Error(`DOCKET_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value;
}
