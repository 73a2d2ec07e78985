import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** Where the front's programs are looked for after `PATH` (`/usr/sbin` is often not on a user's PATH). */
const FALLBACK_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin'];

/** The executables the front runs: nginx, and HAProxy as its port switch. */
export interface FrontPrograms {
  readonly nginx: string;
  readonly haproxy: string;
}

/** A program of the front is not installed (or its `DOCKET_<PROGRAM>` names no executable). */
export class FrontProgramMissingError extends Error {
  override readonly name = 'FrontProgramMissingError';
}

const PROGRAMS = {
  nginx: { variable: 'DOCKET_NGINX', version: 'an nginx 1.22 or newer' },
  haproxy: { variable: 'DOCKET_HAPROXY', version: 'an HAProxy 2.4 or newer' },
} as const;

/**
 * nginx and HAProxy, each from `DOCKET_NGINX` / `DOCKET_HAPROXY` when set,
 * else on `PATH` or in `fallbackDirs` (/usr/sbin, /usr/local/sbin, ...).
 * Throws {@link FrontProgramMissingError} naming the Debian package of
 * the first one missing.
 */
export async function locateFrontPrograms(env: NodeJS.ProcessEnv, fallbackDirs: readonly string[] = FALLBACK_DIRS): Promise<FrontPrograms> {
  return { nginx: await locateProgram('nginx', env, fallbackDirs), haproxy: await locateProgram('haproxy', env, fallbackDirs) };
}

async function locateProgram(program: keyof typeof PROGRAMS, env: NodeJS.ProcessEnv, fallbackDirs: readonly string[]): Promise<string> {
  const { variable, version } = PROGRAMS[program];
  const remedy = `install Debian's ${program} package (sudo apt-get install ${program}), or point ${variable} at ${version}`;
  const configured = env[variable];
  if (configured !== undefined && configured !== '') {
    if (await isExecutable(configured)) return configured;
    throw new FrontProgramMissingError(`the replicas run behind nginx and HAProxy, and ${variable} is ${JSON.stringify(configured)}, which is not an executable file: ${remedy}`);
  }
  const dirs = [...(env['PATH'] ?? '').split(delimiter).filter((dir) => dir !== ''), ...fallbackDirs];
  for (const dir of dirs) {
    const candidate = join(dir, program);
    if (await isExecutable(candidate)) return candidate;
  }
  throw new FrontProgramMissingError(`the replicas run behind nginx and HAProxy, and ${program} is not installed (looked on PATH and in /usr/sbin): ${remedy}`);
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
