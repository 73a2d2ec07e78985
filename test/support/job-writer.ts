import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService, type TransitionJobResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor } from './clients.js';
import { newIdempotencyKey } from './keys.js';

/**
 * Writes to jobs the way later services will: through the state service's
 * TransitionJob with the internal service token, acting for the job's
 * owner. Journal tests use it to append `worker.*` events and to end jobs.
 */
export class JobWriter {
  private readonly state: Client<typeof StateService>;

  constructor(stateUrl: string, serviceToken: string, private readonly owner: string) {
    this.state = clientFor(StateService, stateUrl, serviceToken);
  }

  /** Appends `count` (1..64) events of type `worker.step` without a status change. */
  append(jobId: string, count: number, label = 'step'): Promise<TransitionJobResponse> {
    return this.state.transitionJob({
      caller: { subject: this.owner },
      jobId,
      events: Array.from({ length: count }, (_, index) => ({ type: 'worker.step', payload: { label, index } })),
    });
  }

  /** QUEUED -> CANCELLED with a `job.cancelled` event: the job's terminal event. */
  cancel(jobId: string): Promise<TransitionJobResponse> {
    return this.state.transitionJob({
      caller: { subject: this.owner },
      jobId,
      toStatus: JobStatus.CANCELLED,
      events: [{ type: 'job.cancelled', payload: { reason: 'test' } }],
    });
  }

  /**
   * Like {@link append} or {@link cancel}, repeated while the state service is
   * unavailable (a restart). A repeat after a lost response may journal the
   * events twice; tests compare subscribers with the journal, not with the
   * writer's intent. A repeated cancel that already committed is done.
   */
  async retrying(write: () => Promise<unknown>): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await write();
        return;
      } catch (error) {
        const code = error instanceof ConnectError ? error.code : undefined;
        if (code === Code.FailedPrecondition && attempt > 0) return;
        if (attempt > 100 || (code !== Code.Unavailable && code !== Code.Internal && code !== Code.Unknown)) throw error;
        // Real time: a retry back-off while the state service restarts.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
}

/** Submits `count` jobs for the token's subject through admission; returns their ids. */
export async function submitJobs(admissionUrl: string, token: string, count: number, queue = 'journal'): Promise<string[]> {
  const admission = clientFor(AdmissionService, admissionUrl, token);
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const { job } = await admission.submitJob({ idempotencyKey: newIdempotencyKey('job'), queue, input: { index } });
    ids.push(job!.id);
  }
  return ids;
}

/** A job's whole journal, read page by page through the events service. */
export async function readWholeJournal(eventsUrl: string, token: string, jobId: string): Promise<Event[]> {
  const events = clientFor(EventService, eventsUrl, token);
  const journal: Event[] = [];
  for (;;) {
    const page = await events.readJobEvents({ jobId, afterSequence: journal.at(-1)?.sequence ?? 0n, pageSize: 256 });
    journal.push(...page.events);
    if (page.events.length === 0 || (journal.at(-1)?.sequence ?? 0n) >= page.latestSequence) return journal;
  }
}
