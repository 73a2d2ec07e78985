import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { renderServiceLogLine } from './service-log-line.js';

/** Which service log lines `docket dev` shows in the terminal. */
export type DevLogMode = 'all' | 'warn' | 'none';

/** The accepted values of `--logs`. */
export const DEV_LOG_MODES: readonly DevLogMode[] = ['all', 'warn', 'none'];

const PREFIX_WIDTH = 9;
const COLORS: Record<string, string> = {
  state: '36',
  admission: '32',
  execution: '33',
  events: '35',
  postgres: '34',
  nginx: '37',
};

/**
 * Where the output of `docket dev`'s children goes: every line, verbatim, to
 * `<logsDir>/<source>.log`; to the terminal, the lines `mode` selects,
 * compacted and prefixed by their source so four services stay readable.
 */
export class DevLogSink {
  readonly #files = new Map<string, WriteStream>();
  readonly #logsDir: string;
  readonly #mode: DevLogMode;
  readonly #out: (text: string) => void;
  readonly #colors: boolean;

  constructor(options: { logsDir: string; mode: DevLogMode; out: (text: string) => void; colors: boolean }) {
    this.#logsDir = options.logsDir;
    this.#mode = options.mode;
    this.#out = options.out;
    this.#colors = options.colors;
  }

  /** The log file of `source`. */
  fileOf(source: string): string {
    return join(this.#logsDir, `${source}.log`);
  }

  /** Records one line from `source`; `terminal: false` keeps it out of the terminal whatever the mode. */
  write(source: string, line: string, terminal = true): void {
    let file = this.#files.get(source);
    if (!file) {
      file = createWriteStream(this.fileOf(source), { flags: 'a', mode: 0o600 });
      this.#files.set(source, file);
    }
    file.write(`${line}\n`);
    if (!terminal || this.#mode === 'none') return;
    const rendered = renderServiceLogLine(line);
    if (this.#mode === 'warn' && (rendered.severity === 'info' || rendered.severity === 'debug')) return;
    this.#out(`${this.#prefix(source)}${rendered.text}\n`);
  }

  /** Flushes and closes the log files. */
  async close(): Promise<void> {
    const files = [...this.#files.values()];
    this.#files.clear();
    await Promise.all(files.map((file) => new Promise<void>((resolve) => file.end(resolve))));
  }

  #prefix(source: string): string {
    const label = `${source.padEnd(PREFIX_WIDTH)}│ `;
    // A replica (`admission-2`) in its service's colour.
    const color = COLORS[source.replace(/-\d+$/, '')];
    return this.#colors && color ? `\u001b[${color}m${label}\u001b[0m` : label;
  }
}
