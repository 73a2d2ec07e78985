import { hostname } from 'node:os';
import { createWorker, DEFAULT_EXECUTION_URL, type WorkerOptions } from '@docket/worker-sdk';
import { UsageError, parseCommandArgs, type CliContext, type Command } from './command.js';
import { demoHandler } from './worker-demo-handler.js';
import { workerLog } from './worker-log.js';
import { MINTED_WORKER_SUBJECT, workerTokenSource } from './worker-token.js';

/** Parsed `docket worker` arguments. */
export interface WorkerArguments {
  readonly url: string;
  readonly token: string | undefined;
  readonly name: string;
  readonly queues: readonly string[];
  readonly concurrency: number;
}

/**
 * `docket worker`: a sample worker running the built-in demo handler
 * (count to N with progress and checkpoints, honouring pause and cancel;
 * optionally asking for approval, taking signals and recording an effect).
 * Runs until SIGTERM or Ctrl-C (drain; a second one stops at once), or
 * until a later registration of its name supersedes it. Exit code 0 after
 * a drain or stop, 1 when superseded or refused.
 */
export const workerCommand: Command = {
  name: 'worker',
  summary: 'run a sample worker with the built-in demo handler',
  help: `Usage: docket worker [--url <url>] [--token <jwt>] [--name <name>]
                     [--queue <queue>]... [--concurrency <n>]

Registers a worker with the execution service and runs the demo handler on
every job it claims: it counts from 1 to input.count (default 10), one step
every input.delay_ms (default 200), reporting progress after each step and
saving a checkpoint every 5 steps. A paused job saves a checkpoint and
stops; resumed, it continues from there under a new fence. A cancelled job
stops. Prints one line per job transition.

More of the input:
  approve_at <n>  at step n (0 to count), save a checkpoint and ask the
                  job's owner for approval; the worker prints
                  "<job> waiting for approval <approval_id>". After
                  docket approve <job> the next attempt continues from
                  step n without asking again; docket deny <job> fails it.
  effect true     once counted, record the count exactly once through the
                  effect journal (in an in-process stand-in for an
                  external system); the result gains external_id.
Signals sent with docket signal <job> <name> are printed as
"<job> signal <sequence> <name>"; "add" with --payload '{"n":5}' counts
five steps further at once.

Submit a demo job, for example with buf curl:
  buf curl --http2-prior-knowledge --protocol grpc \\
    -H "authorization: Bearer $TOKEN" \\
    -d '{"idempotencyKey":"demo-job-0000000001","queue":"default","input":{"count":20,"delay_ms":500}}' \\
    http://127.0.0.1:7401/docket.admission.v1.AdmissionService/SubmitJob

Options:
  --url <url>          the execution service (default ${DEFAULT_EXECUTION_URL})
  --token <jwt>        a bearer token with role worker (default:
                       DOCKET_WORKER_TOKEN, else one minted for subject
                       ${MINTED_WORKER_SUBJECT} with DOCKET_AUTH_SECRET or docket
                       dev's secret, renewed hourly; DOCKET_TOKEN is not
                       used, it holds the user token by convention)
  --name <name>        the worker's name (default demo-<host>); registering a
                       name again supersedes the worker that had it, so give
                       each concurrent worker its own
  --queue <queue>      a queue to claim from; repeat for more (default default)
  --concurrency <n>    most jobs at once, 1 to 1000 (default 4)

SIGTERM or Ctrl-C drains: no new claims, running jobs finish (30 s grace);
a second signal stops at once (unfinished jobs are retried from their last
checkpoint after their lease expires).
`,
  async run(args, context) {
    const parsed = parseWorkerArguments(args);
    return runWorker(parsed, context);
  },
};

/** Reads `docket worker` arguments; throws a UsageError for anything wrong. */
export function parseWorkerArguments(args: readonly string[]): WorkerArguments {
  const flags = { url: { type: 'string' }, token: { type: 'string' }, name: { type: 'string' }, queue: { type: 'string', multiple: true }, concurrency: { type: 'string' } } as const;
  const { values } = parseCommandArgs(args, flags, 'none');
  const url = values.url ?? DEFAULT_EXECUTION_URL;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError('--url must be an http:// or https:// URL');
  if (values.token === '') throw new UsageError('--token must not be empty');
  const name = values.name ?? defaultWorkerName();
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(name)) throw new UsageError('--name must be 1 to 128 characters of [A-Za-z0-9._:-]');
  const queues = values.queue ?? ['default'];
  if (new Set(queues).size !== queues.length) throw new UsageError('each --queue once');
  const concurrencyText = values.concurrency ?? '4';
  const concurrency = Number(concurrencyText);
  if (!/^\d+$/.test(concurrencyText) || concurrency < 1 || concurrency > 1000) throw new UsageError('--concurrency must be a whole number from 1 to 1000');
  return { url, token: values.token, name, queues, concurrency };
}

/** `demo-<host name>`, reduced to the characters a worker name allows. */
export function defaultWorkerName(): string {
  return `demo-${hostname().replace(/[^A-Za-z0-9._:-]/g, '-')}`.slice(0, 128);
}

/** Runs the demo worker until it stops; resolves to the exit code. */
async function runWorker(parsed: WorkerArguments, context: CliContext): Promise<number> {
  const logger = workerLog(context);
  let options: WorkerOptions;
  try {
    options = {
      url: parsed.url,
      token: await workerTokenSource(parsed.token, context),
      name: parsed.name,
      queues: parsed.queues,
      concurrency: parsed.concurrency,
      handleSignals: true,
      logger,
      handler: demoHandler({ say: (line) => logger.info(line) }),
    };
  } catch (error) {
    context.err(`docket worker: ${(error as Error).message}\n`);
    return 1;
  }
  const worker = createWorker(options);
  try {
    await worker.start();
  } catch (error) {
    context.err(`docket worker: could not register with ${parsed.url}: ${(error as Error).message}\n`);
    return 1;
  }
  context.out(`worker ${parsed.name} claiming from ${parsed.queues.join(', ')} at ${parsed.url}; Ctrl-C drains\n`);
  const exit = await worker.done;
  if (exit.reason === 'superseded' || exit.reason === 'failed') {
    context.err(`docket worker: ${exit.reason}${exit.error ? `: ${exit.error.message}` : ''}\n`);
    return 1;
  }
  return 0;
}
