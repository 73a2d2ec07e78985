import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { RenewAttemptRequestSchema, RenewAttemptResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { boundedLease } from '../attempts/attempt-limits.js';
import { planDelivery } from '../signals/signal-inbox.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { inboxTransition } from './attempt-writes.js';

const RENEW_ATTEMPT = { case: 'renewAttempt', rpc: 'RenewAttempt', requestSchema: RenewAttemptRequestSchema, responseSchema: RenewAttemptResponseSchema } as const;

/**
 * RenewAttempt: the lease is extended (by the database clock, never past
 * the attempt's limit) and the job's outstanding signals are handed to the
 * attempt; the answer says whether a cancel or pause was asked for.
 */
export function renewAttempt(subject: string, request: ReportRequest<'renewAttempt'>): AttemptReport {
  return attemptReport(subject, RENEW_ATTEMPT, request, (job, writes, now, settings, reads) => {
    const lease = boundedLease(job, now, settings.leaseMs);
    const leaseExpiresAt = lease.lease_expires_at;
    const renewed = { ...job, ...lease };
    const delivery = planDelivery(renewed, job.current_attempt_id ?? '', reads.signals.get(job.id) ?? []);
    if (delivery.change.events.length === 0) writes.update(renewed);
    else inboxTransition(writes, renewed, delivery.change, now);
    return create(RenewAttemptResponseSchema, {
      leaseExpiresAt: timestampFromDate(leaseExpiresAt),
      cancelRequested: job.status === 'CANCELLING',
      pauseRequested: job.pause_requested,
      pendingSignals: delivery.signals,
    });
  });
}
