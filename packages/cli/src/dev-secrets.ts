import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The secrets a local system signs tokens and cursors with. */
export interface DevSecrets {
  /** HS256 secret (`DOCKET_AUTH_SECRET`). */
  readonly authSecret: string;
  /** Page token and cursor secret (`DOCKET_CURSOR_SECRET`). */
  readonly cursorSecret: string;
  /** The secret of the internal hop to the state service (`DOCKET_SERVICE_AUTH_SECRET`). */
  readonly serviceAuthSecret: string;
}

const newSecret = (): string => randomBytes(32).toString('base64url');

/** `<dataDir>/secrets.json`. */
export function devSecretsPath(dataDir: string): string {
  return join(dataDir, 'secrets.json');
}

/**
 * Reads `<dataDir>/secrets.json`, creating it on first use with three fresh
 * 256-bit secrets, mode 0600. Keeping them across runs keeps tokens minted
 * by `docket token` (and cursors held by clients) valid after a restart. A
 * file written before the service secret existed gets one added.
 */
export async function loadOrCreateDevSecrets(dataDir: string): Promise<DevSecrets> {
  await mkdir(dataDir, { recursive: true });
  const file = devSecretsPath(dataDir);
  const fresh: DevSecrets = { authSecret: newSecret(), cursorSecret: newSecret(), serviceAuthSecret: newSecret() };
  // Written whole beside the file, then linked into place: a concurrent reader sees no file or the whole
  // file, never an empty one, and the link fails if another process got there first.
  const staged = await stagedCopy(file, fresh);
  try {
    await link(staged, file);
    return fresh;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(staged);
  }
  const existing = await readDevSecrets(dataDir);
  if (!existing) throw new Error(`${file} vanished while being read`);
  if (existing.serviceAuthSecret !== undefined) return { ...existing, serviceAuthSecret: existing.serviceAuthSecret };
  const upgraded: DevSecrets = { ...existing, serviceAuthSecret: newSecret() };
  await rename(await stagedCopy(file, upgraded), file);
  return upgraded;
}

/** `secrets` written whole, mode 0600, to a fresh file beside `file`; its path. */
async function stagedCopy(file: string, secrets: DevSecrets): Promise<string> {
  const staged = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(staged, `${JSON.stringify(secrets, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
  return staged;
}

/**
 * Reads `<dataDir>/secrets.json` without creating it: `undefined` when it
 * does not exist; an error naming the file when it is malformed. Tightens
 * the file to 0600 if others could read it.
 */
export async function readDevSecrets(dataDir: string): Promise<StoredDevSecrets | undefined> {
  const file = devSecretsPath(dataDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const record = (parsed ?? {}) as Partial<Record<keyof DevSecrets, unknown>>;
  if (!isSecret(record.authSecret) || !isSecret(record.cursorSecret) || !(record.serviceAuthSecret === undefined || isSecret(record.serviceAuthSecret))) {
    throw new Error(`${file} is not valid: expected {"authSecret": "...", "cursorSecret": "...", "serviceAuthSecret": "..."}`);
  }
  return {
    authSecret: record.authSecret,
    cursorSecret: record.cursorSecret,
    ...(record.serviceAuthSecret === undefined ? {} : { serviceAuthSecret: record.serviceAuthSecret }),
  };
}

/** `secrets.json` as found: one written by an older Docket has no service secret yet. */
export type StoredDevSecrets = Omit<DevSecrets, 'serviceAuthSecret'> & { readonly serviceAuthSecret?: string };

function isSecret(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 16;
}
