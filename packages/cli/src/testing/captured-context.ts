import type { CliContext } from '../command.js';

/**
 * A CLI context for commands run in a test: no environment, a working
 * directory that does not exist, and everything written to standard output
 * and standard error kept for `output()`. `terminal` says whether standard
 * output is a terminal (left unsaid unless given).
 */
export function capture(options: { terminal?: boolean } = {}): CliContext & { output: () => { out: string; err: string } } {
  let out = '';
  let err = '';
  return {
    env: {},
    cwd: '/nonexistent',
    out: (text) => (out += text),
    err: (text) => (err += text),
    ...(options.terminal === undefined ? {} : { outIsTerminal: options.terminal }),
    output: () => ({ out, err }),
  };
}
