import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/cluster.js';
import { filesUnder } from './support/repository-files.js';

/*
 * The docs name files and sections; a rename that forgets them leaves a
 * reader at a dead end. Every relative link of every Markdown page (README,
 * docs/, the packages' and deploy's pages) must reach a file or folder that
 * exists, and its #anchor a heading of that page; every repository path
 * quoted as code (`services/state/src/...`) must exist, or be one git
 * ignores (a file the reader makes, such as `deploy/.env`). Benchmark
 * results are generated and not checked.
 */

/** Markdown pages of the repository, relative to its root (benchmark results are generated). */
function markdownPages(): string[] {
  return filesUnder(REPO_ROOT, (name) => name.endsWith('.md'), new Set(['results'])).map((path) => relative(REPO_ROOT, path));
}

/** The text of a page without its fenced code blocks (examples, not links). */
function proseOf(page: string): string {
  return readFileSync(join(REPO_ROOT, page), 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a page's headings, numbered as GitHub numbers repeated ones. */
function anchorsOf(page: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of proseOf(page).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const anchor = anchorOf(heading!);
    const count = seen.get(anchor) ?? 0;
    seen.set(anchor, count + 1);
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
  }
  return anchors;
}

/** Relative link targets of a page: `[text](target)`, neither a URL nor mail. */
function linksOf(page: string): string[] {
  return [...proseOf(page).matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** Repository paths a page quotes as code: `services/...`, `packages/...`, and the other top-level folders. */
function quotedPathsOf(page: string): string[] {
  return [...proseOf(page).matchAll(/`((?:services|packages|test|bench|deploy|docs|proto|\.ci)\/[\w./-]+)`/g)]
    .map((match) => match[1]!.replace(/[.:]$/, ''))
    .filter((path) => !path.includes('...'));
}

/** Whether git ignores `path`: a file the reader creates, named but never committed. */
function isIgnored(path: string): boolean {
  try {
    execFileSync('git', ['check-ignore', '--quiet', '--no-index', path], { cwd: REPO_ROOT });
    return true;
  } catch {
    return false;
  }
}

const pages = markdownPages();

describe('the docs', () => {
  it('are found: README, docs/ and the pages beside the code', () => {
    expect(pages).toContain('README.md');
    expect(pages.filter((page) => page.startsWith('docs/')).length).toBeGreaterThan(10);
  });

  it('link only to files, folders and headings that exist', () => {
    const dead: string[] = [];
    expect(pages.flatMap(linksOf).length).toBeGreaterThan(50);
    for (const page of pages) {
      for (const target of linksOf(page)) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? join(REPO_ROOT, page) : resolve(dirname(join(REPO_ROOT, page)), decodeURIComponent(path));
        if (!existsSync(file)) {
          dead.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor && file.endsWith('.md') && !anchorsOf(relative(REPO_ROOT, file)).has(anchor)) dead.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('quote only repository paths that exist', () => {
    const quoted = pages.flatMap((page) => quotedPathsOf(page).map((path) => ({ page, path })));
    expect(quoted.length).toBeGreaterThan(50);
    const missing = quoted.filter(({ path }) => !existsSync(join(REPO_ROOT, path)) && !isIgnored(path)).map(({ page, path }) => `${page}: ${path}`);
    expect(missing).toEqual([]);
  });
});
