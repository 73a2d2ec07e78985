#!/usr/bin/env node
// The `docket` command as npm links it into node_modules/.bin. This file is
// committed (dist/ is not), so the link exists right after `npm install` on
// a fresh clone; the command itself is the build's dist/main.js, which
// `npm start` and `npm test` build first.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('docket: the workspace is not built yet; run `npm run build` (or `npm start`) first\n');
  process.exit(1);
}
await import(entry.href);
