#!/usr/bin/env node
import { runCli } from './run-cli.js';

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  outIsTerminal: process.stdout.isTTY === true,
});
process.exitCode = code;
// Idle HTTP/2 sessions or timers must not keep a finished command alive;
// the timer is unref'd, so a process that is already done exits sooner.
setTimeout(() => process.exit(code), 1_000).unref();
