import type { ConnectRouter } from '@connectrpc/connect';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { forwardDeadline, principalOf } from '@docket/service-kit';
import { explainJob, getJob, listJobs, submitJob, type AdmissionDependencies } from '../domain/admission.js';
import { listWorkers } from '../domain/list-workers.js';
import { getBulkOperation, startBulkOperation } from '../domain/bulk-operations.js';
import { JOB_CHANGE_RPCS, changeJob } from '../domain/change-job.js';
import { forwardOwnerCall } from '../domain/owner-call.js';
import { submitJobs } from '../domain/submit-jobs.js';
import { submitJobAnswer, submitJobsAnswer } from '../domain/submitted-answers.js';
import { getDeletion, setLegalHold, setRetentionPolicy } from '../domain/lifecycle-admin.js';
import { getQueue, getQueueStats, setQueuePolicy } from '../domain/queue-admin.js';
import { getSchedule, listSchedules, mutateSchedule } from '../domain/schedules.js';

/**
 * Registers docket.admission.v1.AdmissionService. RPCs that later work
 * implements are left out and answer UNIMPLEMENTED.
 */
export function admissionServiceRoutes(deps: AdmissionDependencies): (router: ConnectRouter) => void {
  return (router) => {
    router.service(AdmissionService, {
      submitJob: async (request, ctx) => submitJobAnswer(await submitJob(deps, principalOf(ctx), request, forwardDeadline(ctx)), ctx),
      submitJobs: async (request, ctx) => submitJobsAnswer(await submitJobs(deps, principalOf(ctx), request, forwardDeadline(ctx)), ctx),
      getJob: (request, ctx) => getJob(deps, principalOf(ctx), request.jobId, forwardDeadline(ctx)),
      listJobs: (request, ctx) => listJobs(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      cancelJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.cancel, request, forwardDeadline(ctx)),
      pauseJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.pause, request, forwardDeadline(ctx)),
      resumeJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.resume, request, forwardDeadline(ctx)),
      softDeleteJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.softDelete, request, forwardDeadline(ctx)),
      restoreJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.restore, request, forwardDeadline(ctx)),
      retryJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.retry, request, forwardDeadline(ctx)),
      hardDeleteJob: (request, ctx) => changeJob(deps, principalOf(ctx), JOB_CHANGE_RPCS.hardDelete, request, forwardDeadline(ctx)),
      getDeletion: (request, ctx) => getDeletion(deps, principalOf(ctx), request.deletionId, forwardDeadline(ctx)),
      setRetentionPolicy: (request, ctx) => setRetentionPolicy(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      setQueuePolicy: (request, ctx) => setQueuePolicy(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      getQueue: (request, ctx) => getQueue(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      getQueueStats: (request, ctx) => getQueueStats(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      explainJob: (request, ctx) => explainJob(deps, principalOf(ctx), request.jobId, forwardDeadline(ctx)),
      listWorkers: (request, ctx) => listWorkers(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      retryJobs: (request, ctx) => startBulkOperation(deps, principalOf(ctx), 'retryJobs', request, forwardDeadline(ctx)),
      cancelJobs: (request, ctx) => startBulkOperation(deps, principalOf(ctx), 'cancelJobs', request, forwardDeadline(ctx)),
      getBulkOperation: (request, ctx) => getBulkOperation(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      setLegalHold: (request, ctx) => setLegalHold(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      decideApproval: (request, ctx) => forwardOwnerCall(deps, principalOf(ctx), 'decideApproval', request, forwardDeadline(ctx)),
      sendSignal: (request, ctx) => forwardOwnerCall(deps, principalOf(ctx), 'sendSignal', request, forwardDeadline(ctx)),
      reconcileSignals: (request, ctx) => forwardOwnerCall(deps, principalOf(ctx), 'reconcileSignals', request, forwardDeadline(ctx)),
      createSchedule: (request, ctx) => mutateSchedule(deps, principalOf(ctx), 'createSchedule', request, forwardDeadline(ctx)),
      getSchedule: (request, ctx) => getSchedule(deps, principalOf(ctx), request.scheduleId, forwardDeadline(ctx)),
      listSchedules: (request, ctx) => listSchedules(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      pauseSchedule: (request, ctx) => mutateSchedule(deps, principalOf(ctx), 'pauseSchedule', request, forwardDeadline(ctx)),
      resumeSchedule: (request, ctx) => mutateSchedule(deps, principalOf(ctx), 'resumeSchedule', request, forwardDeadline(ctx)),
      deleteSchedule: (request, ctx) => mutateSchedule(deps, principalOf(ctx), 'deleteSchedule', request, forwardDeadline(ctx)),
    });
  };
}
