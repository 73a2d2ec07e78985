import { DeletionState } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { JobLifecycle } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { CliContext, Command } from './command.js';
import { OWNER_OPTIONS_HELP, admissionCommand, ownerHelpFooter, ownerRequest, parseOwnerArguments, soleJobId, type AdmissionClient, type OwnerOptions } from './owner-call.js';

/** Parsed `docket delete` arguments. */
export interface DeleteArguments {
  readonly jobId: string;
  /** `true`: HardDeleteJob (erase for good); `false`: SoftDeleteJob (hide). */
  readonly hard: boolean;
  readonly owner: OwnerOptions;
}

/** Parsed `docket restore` arguments. */
export interface RestoreArguments {
  readonly jobId: string;
  readonly owner: OwnerOptions;
}

/** Reads `docket delete <job_id> [--hard] [--key KEY] ...`; UsageError for anything wrong. */
export function parseDeleteArguments(args: readonly string[]): DeleteArguments {
  const { positionals, values, owner } = parseOwnerArguments(args, { hard: { type: 'boolean' } });
  return { jobId: soleJobId(positionals), hard: values['hard'] === true, owner };
}

/** Reads `docket restore <job_id> [--key KEY] ...`; UsageError for anything wrong. */
export function parseRestoreArguments(args: readonly string[]): RestoreArguments {
  const { positionals, owner } = parseOwnerArguments(args, {});
  return { jobId: soleJobId(positionals), owner };
}

/**
 * Deletes the job under the request's key: SoftDeleteJob, printing the
 * job's lifecycle, or with `hard` HardDeleteJob, printing the deletion
 * operation it started. Resolves to the exit code.
 */
export async function deleteJob(client: AdmissionClient, parsed: DeleteArguments, context: CliContext): Promise<number> {
  const { jobId, owner } = parsed;
  if (parsed.hard) {
    const hardDelete = (idempotencyKey: string) => client.hardDeleteJob({ idempotencyKey, jobId });
    return ownerRequest('delete', owner, context, hardDelete, ({ deletion }) =>
      deletion ? `deleting ${jobId}: deletion ${deletion.deletionId} ${DeletionState[deletion.state]}` : `deleting ${jobId}: no deletion in the answer`,
    );
  }
  const softDelete = (idempotencyKey: string) => client.softDeleteJob({ idempotencyKey, jobId });
  return ownerRequest('delete', owner, context, softDelete, ({ job }) => `soft-deleted ${jobId}: lifecycle ${job ? JobLifecycle[job.lifecycle] : 'unknown'}`);
}

/** Brings a soft-deleted job back (RestoreJob) and prints its lifecycle; resolves to the exit code. */
export async function restoreJob(client: AdmissionClient, parsed: RestoreArguments, context: CliContext): Promise<number> {
  const { jobId, owner } = parsed;
  const restore = (idempotencyKey: string) => client.restoreJob({ idempotencyKey, jobId });
  return ownerRequest('restore', owner, context, restore, ({ job }) => `restored ${jobId}: lifecycle ${job ? JobLifecycle[job.lifecycle] : 'unknown'}`);
}

/** `docket delete <job_id> [--hard]`: AdmissionService.SoftDeleteJob, or HardDeleteJob. */
export const deleteCommand: Command = admissionCommand({
  name: 'delete',
  summary: 'hide an ended job (soft delete), or with --hard erase it for good',
  help: `Usage: docket delete <job_id> [--hard] [--key <key>]
                     [--url <url>] [--token <jwt>]

Deletes a job that has ended (SUCCEEDED, FAILED, CANCELLED or
INTERRUPTED). A job that has not ended, or is under legal hold (see
docket help hold), is refused (failed_precondition ILLEGAL_TRANSITION).

Without --hard, soft-deletes it (AdmissionService SoftDeleteJob): the job
is hidden from listings (lifecycle SOFT_DELETED) and keeps all its data;
docket restore brings it back.

With --hard, erases it (AdmissionService HardDeleteJob): the job is
tombstoned at once (lifecycle HARD_DELETING) and a durable deletion
operation erases its input, result, checkpoints, events, signals and
effects in the background, in bounded batches, resuming after any crash.
Follow it with docket deletion <deletion_id> (--wait to wait for the end).
When it completes the job is HARD_DELETED: only a minimal tombstone is
left (id, owner, terminal status, deletion id, timings). Nothing can be
restored after --hard, not even while the deletion is still running.

Prints one line:
  soft-deleted <job_id>: lifecycle SOFT_DELETED
  deleting <job_id>: deletion <deletion_id> <STATE>

Options:
  --hard          erase the job for good instead of hiding it
${OWNER_OPTIONS_HELP}

Exit status: 0 deleted, or deletion started (or replayed), 1 refused or
failed (the gRPC code and reason are printed), 2 bad arguments.
`,
  parse: parseDeleteArguments,
  call: deleteJob,
});

/** `docket restore <job_id>`: AdmissionService.RestoreJob. */
export const restoreCommand: Command = admissionCommand({
  name: 'restore',
  summary: 'bring a soft-deleted job back',
  help: `Usage: docket restore <job_id> [--key <key>]
                     [--url <url>] [--token <jwt>]

Brings a soft-deleted job back (AdmissionService RestoreJob): it is
listed again (lifecycle ACTIVE), with all its data, in the status it
ended in. A job that is already ACTIVE is answered as it is; a
hard-deleted one, whose data is gone or going, is refused
(failed_precondition ILLEGAL_TRANSITION; see docket help delete).

Prints one line: restored <job_id>: lifecycle ACTIVE

${ownerHelpFooter('restored')}`,
  parse: parseRestoreArguments,
  call: restoreJob,
});
