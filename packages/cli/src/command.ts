import { parseArgs, type ParseArgsConfig } from 'node:util';

/** What a command reads from and writes to; injected so commands are testable. */
export interface CliContext {
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Writes to standard output (text includes its own newlines). */
  readonly out: (text: string) => void;
  /** Writes to standard error. */
  readonly err: (text: string) => void;
  /** Whether standard output is a terminal, where a line may be rewritten in place (a progress bar); absent means no. */
  readonly outIsTerminal?: boolean;
}

/** One `docket <name>` subcommand. */
export interface Command {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The full `docket help <name>` text. */
  readonly help: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: readonly string[], context: CliContext): Promise<number>;
}

/**
 * Wrong arguments: reported with a pointer to the command's help and exit
 * code 2, unlike runtime failures (exit code 1).
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The flags a command takes, as `parseArgs` describes them. */
export type CommandFlags = NonNullable<ParseArgsConfig['options']>;

/**
 * A command's arguments, parsed strictly (`parseArgs` with `strict: true`):
 * whatever `parseArgs` refuses (an unknown flag, a missing value, a
 * positional argument when `positionals` is `'none'`) is a
 * {@link UsageError} with its message.
 */
export function parseCommandArgs<F extends CommandFlags, P extends 'any' | 'none'>(
  args: readonly string[],
  flags: F,
  positionals: P,
): ReturnType<typeof parseArgs<{ args: string[]; options: F; strict: true; allowPositionals: P extends 'any' ? true : false }>> {
  try {
    return parseArgs({ args: [...args], options: flags, strict: true, allowPositionals: (positionals === 'any') as P extends 'any' ? true : false });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * Refuses positional arguments to a command that takes none: a
 * {@link UsageError} `<command> takes no positional arguments (got ...)`,
 * then `hint` (say, where the value belongs instead).
 */
export function refusePositionals(command: string, positionals: readonly string[], hint = ''): void {
  if (positionals.length > 0) throw new UsageError(`${command} takes no positional arguments (got ${positionals.join(' ')})${hint}`);
}

/**
 * The one argument among `positionals` (a job id, a schedule id, ...): a
 * {@link UsageError} saying `missing` when it is absent or empty, and
 * `one <what> at a time (also got ...)` when more follow it.
 */
export function soleArgument(positionals: readonly string[], missing: string, what: string): string {
  const [argument, ...extra] = positionals;
  if (argument === undefined || argument === '') throw new UsageError(missing);
  if (extra.length > 0) throw new UsageError(`one ${what} at a time (also got ${extra.join(' ')})`);
  return argument;
}
