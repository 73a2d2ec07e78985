import { adminCommand } from './admin-command.js';
import { approveCommand, denyCommand } from './approval-commands.js';
import { bulkCommand } from './bulk-command.js';
import { UsageError, type CliContext, type Command } from './command.js';
import { deleteCommand, restoreCommand } from './delete-commands.js';
import { deletionCommand } from './deletion-command.js';
import { devCommand } from './dev-command.js';
import { explainCommand } from './explain-command.js';
import { getCommand } from './get-command.js';
import { holdCommand, releaseCommand } from './legal-hold-commands.js';
import { listCommand } from './list-command.js';
import { queueCommand } from './queue-commands.js';
import { retentionCommand } from './retention-command.js';
import { retryCommand } from './retry-command.js';
import { scheduleCommand } from './schedule-commands.js';
import { signalCommand, signalsCommand } from './signal-commands.js';
import { submitCommand } from './submit-command.js';
import { tokenCommand } from './token-command.js';
import { cancelCommand, pauseCommand, resumeCommand } from './transition-commands.js';
import { verifyCommand } from './verify-command.js';
import { watchCommand } from './watch-command.js';
import { workerCommand } from './worker-command.js';
import { workersCommand } from './workers-command.js';

/** The subcommands, in the order `docket help` lists them. */
const COMMANDS: readonly Command[] = [
  devCommand,
  tokenCommand,
  verifyCommand,
  workerCommand,
  submitCommand,
  getCommand,
  explainCommand,
  listCommand,
  watchCommand,
  cancelCommand,
  pauseCommand,
  resumeCommand,
  approveCommand,
  denyCommand,
  signalCommand,
  signalsCommand,
  retryCommand,
  bulkCommand,
  deleteCommand,
  restoreCommand,
  deletionCommand,
  holdCommand,
  releaseCommand,
  queueCommand,
  workersCommand,
  retentionCommand,
  scheduleCommand,
  adminCommand,
];

const HELP_FLAGS = new Set(['-h', '--help']);

/**
 * Routes `docket <command> [args]` and resolves to the process exit code:
 * 0 on success, 1 when the command failed, 2 for a usage error (unknown
 * command or bad arguments), which also prints where to find help.
 * `docket`, `docket help`, `docket --help` list the commands;
 * `docket help <command>` and `docket <command> --help` explain one.
 */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || HELP_FLAGS.has(name)) {
    return showHelp(rest[0], context);
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    context.err(`docket: unknown command "${name}"\n\n${overview()}`);
    return 2;
  }
  if (rest.some((arg) => HELP_FLAGS.has(arg))) return showHelp(command.name, context);
  try {
    return await command.run(rest, context);
  } catch (error) {
    if (error instanceof UsageError) {
      context.err(`docket ${command.name}: ${error.message}\nSee: docket help ${command.name}\n`);
      return 2;
    }
    context.err(`docket ${command.name}: ${(error as Error).message}\n`);
    return 1;
  }
}

function showHelp(topic: string | undefined, context: CliContext): number {
  if (topic === undefined) {
    context.out(overview());
    return 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === topic);
  if (!command) {
    context.err(`docket help: unknown command "${topic}"\n\n${overview()}`);
    return 2;
  }
  context.out(command.help);
  return 0;
}

function overview(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length), 4) + 2;
  return [
    'Usage: docket <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}${command.summary}`),
    `  ${'help'.padEnd(width)}show this list, or "docket help <command>" for one command`,
    '',
  ].join('\n');
}
