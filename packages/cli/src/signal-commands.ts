import type { JsonObject } from '@bufbuild/protobuf';
import { SignalReconcileAction } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { SignalState } from '@docket/proto/docket/common/v1/signal_pb.js';
import { UsageError, type CliContext, type Command } from './command.js';
import { parseJsonObjectFlag } from './json-object-flag.js';
import { admissionCommand, ownerHelpFooter, ownerRequest, parseOwnerArguments, type AdmissionClient, type OwnerOptions } from './owner-call.js';

/** Parsed `docket signal` arguments. */
export interface SignalArguments {
  readonly jobId: string;
  readonly name: string;
  readonly payload: JsonObject;
  readonly owner: OwnerOptions;
}

/** Parsed `docket signals reconcile` arguments. */
export interface ReconcileArguments {
  readonly jobId: string;
  readonly action: 'redeliver' | 'discard';
  readonly owner: OwnerOptions;
}

/** Reads `docket signal <job_id> <name> [--payload JSON] [--key KEY] ...`; UsageError for anything wrong. */
export function parseSignalArguments(args: readonly string[]): SignalArguments {
  const { positionals, values, owner } = parseOwnerArguments(args, { payload: { type: 'string' } });
  const [jobId, name, ...extra] = positionals;
  if (jobId === undefined || jobId === '') throw new UsageError('a job id is required');
  if (name === undefined || name === '') throw new UsageError('a signal name is required');
  if (extra.length > 0) throw new UsageError(`one signal at a time (also got ${extra.join(' ')})`);
  return { jobId, name, payload: parseJsonObjectFlag(values['payload'] as string | undefined, '--payload'), owner };
}

/** Reads `docket signals reconcile <job_id> --redeliver|--discard [--key KEY] ...`; UsageError for anything wrong. */
export function parseReconcileArguments(args: readonly string[]): ReconcileArguments {
  const { positionals, values, owner } = parseOwnerArguments(args, { redeliver: { type: 'boolean' }, discard: { type: 'boolean' } });
  const [subcommand, jobId, ...extra] = positionals;
  if (subcommand !== 'reconcile') throw new UsageError(subcommand === undefined ? 'a subcommand is required: reconcile' : `unknown subcommand "${subcommand}" (the one there is: reconcile)`);
  if (jobId === undefined || jobId === '') throw new UsageError('a job id is required');
  if (extra.length > 0) throw new UsageError(`one job at a time (also got ${extra.join(' ')})`);
  const redeliver = values['redeliver'] === true;
  const discard = values['discard'] === true;
  if (redeliver === discard) throw new UsageError('say either --redeliver or --discard');
  return { jobId, action: redeliver ? 'redeliver' : 'discard', owner };
}

/** Sends the signal (SendSignal) and prints its sequence and state; resolves to the exit code. */
export async function sendSignal(client: AdmissionClient, parsed: SignalArguments, context: CliContext): Promise<number> {
  const { jobId, name, payload, owner } = parsed;
  const send = (idempotencyKey: string) => client.sendSignal({ idempotencyKey, jobId, name, payload });
  return ownerRequest('signal', owner, context, send, ({ signal }) => `signal ${signal?.sequence ?? '?'} ${JSON.stringify(name)} to ${jobId}: ${signal ? SignalState[signal.state] : 'unknown'}`);
}

/** Resolves the job's UNKNOWN signals (ReconcileSignals) and prints what is left; resolves to the exit code. */
export async function reconcileSignals(client: AdmissionClient, parsed: ReconcileArguments, context: CliContext): Promise<number> {
  const { jobId, owner } = parsed;
  const action = parsed.action === 'redeliver' ? SignalReconcileAction.REDELIVER : SignalReconcileAction.DISCARD;
  const reconcile = (idempotencyKey: string) => client.reconcileSignals({ idempotencyKey, jobId, action });
  return ownerRequest('signals', owner, context, reconcile, ({ job }) => {
    const after = job ? `${job.unresolvedSignals} unresolved signal(s) left, the job is ${JobStatus[job.status]}` : 'no job in the answer';
    return `${parsed.action === 'redeliver' ? 'redelivering' : 'discarded'} the UNKNOWN signals of ${jobId}: ${after}`;
  });
}

/** `docket signal <job_id> <name>`: AdmissionService.SendSignal. */
export const signalCommand: Command = admissionCommand({
  name: 'signal',
  summary: 'send a named signal (with a JSON payload) to a job',
  help: `Usage: docket signal <job_id> <name> [--payload <json>] [--key <key>]
                     [--url <url>] [--token <jwt>]

Appends a signal to the job's inbox (AdmissionService SendSignal) with the
next per-job sequence. The worker running the job receives it with its
next lease renewal (within about a second while its handler waits for
signals) and acknowledges it once handled. While a signal a lost attempt
had received is UNKNOWN, new signals are refused (failed_precondition
SIGNALS_UNRESOLVED): see docket help signals.

Prints one line: signal <sequence> "<name>" to <job_id>: <STATE>

${ownerHelpFooter('sent', "  --payload <json>  the signal's payload, a JSON object (default {})")}`,
  parse: parseSignalArguments,
  call: sendSignal,
});

/** `docket signals reconcile <job_id> --redeliver|--discard`: AdmissionService.ReconcileSignals. */
export const signalsCommand: Command = admissionCommand({
  name: 'signals',
  summary: "resolve a job's UNKNOWN signals (reconcile --redeliver or --discard)",
  help: `Usage: docket signals reconcile <job_id> (--redeliver | --discard) [--key <key>]
                     [--url <url>] [--token <jwt>]

Resolves the job's UNKNOWN signals (AdmissionService ReconcileSignals):
signals an attempt had received but not acknowledged when it was lost, so
nobody knows whether the worker acted on them. Until they are resolved the
job accepts no new signal and nothing later is delivered.
  --redeliver  deliver them again to the next attempt, marked redelivered
               (the handler should check before acting twice)
  --discard    drop them for good

Prints one line with the unresolved signals left and the job's status.

${ownerHelpFooter('reconciled')}`,
  parse: parseReconcileArguments,
  call: reconcileSignals,
});
