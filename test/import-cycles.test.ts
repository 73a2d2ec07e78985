import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/cluster.js';
import { filesUnder } from './support/repository-files.js';

/*
 * No module of a package or service imports itself back through others,
 * not even for a type: a cycle ties files together so that neither can be
 * read, moved or tested alone. Packages cannot form cycles among
 * themselves (TypeScript's project references refuse circular ones), so
 * this looks at the relative imports inside each `src/`.
 */

/** The non-test TypeScript sources of every package and service. */
function sources(): string[] {
  const isSource = (name: string) => /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith('.d.ts');
  return ['packages', 'services'].flatMap((top) =>
    readdirSync(join(REPO_ROOT, top))
      .map((name) => join(REPO_ROOT, top, name, 'src'))
      .filter((src) => existsSync(src))
      .flatMap((src) => filesUnder(src, isSource)),
  );
}

/** The source files a file imports or re-exports by relative path (`import type` and bare `import './x.js'` included). */
function relativeImportsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^\s*(?:(?:import|export)\s[^'"]*?from\s+|import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)].flatMap((match) => {
    const target = resolve(dirname(file), match[1]!).replace(/\.js$/, '');
    return ['.ts', '.tsx'].map((extension) => target + extension).filter((candidate) => existsSync(candidate));
  });
}

/** The strongly connected groups of more than one file (Tarjan), each a cycle or several. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, counter);
    lowest.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(next)!));
      } else if (onStack.has(next)) {
        lowest.set(file, Math.min(lowest.get(file)!, order.get(next)!));
      }
    }
    if (lowest.get(file) !== order.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) groups.push(group);
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return groups;
}

describe('imports', () => {
  it('form no cycle inside any package or service', () => {
    const files = sources();
    expect(files.length).toBeGreaterThan(100);
    const graph = new Map(files.map((file) => [file, relativeImportsOf(file)]));
    expect([...graph.values()].flat().length).toBeGreaterThan(files.length);
    const cycles = cyclesOf(graph).map((group) => group.map((file) => relative(REPO_ROOT, file)).sort().join(' <-> '));
    expect(cycles).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cyclesOf(graph).map((group) => [...group].sort())).toEqual([['a', 'b', 'c']]);
  });
});
