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
