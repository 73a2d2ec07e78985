import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Folders no check of the repository's own files looks into: installed, built, generated or versioned elsewhere. */
const NOT_SOURCE = new Set(['node_modules', '.git', 'dist', 'gen', '.venv']);

/**
 * Every file under `directory` whose name `wanted` accepts, as absolute
 * paths, skipping installed, built and generated folders and any folder
 * named in `skip`.
 */
export function filesUnder(directory: string, wanted: (name: string) => boolean, skip: ReadonlySet<string> = new Set()): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return NOT_SOURCE.has(name) || skip.has(name) ? [] : filesUnder(path, wanted, skip);
    return wanted(name) ? [path] : [];
  });
}
