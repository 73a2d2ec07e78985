import { create } from '@bufbuild/protobuf';
import { AckSignalsRequestSchema, AckSignalsResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { planAcknowledgement } from '../signals/signal-inbox.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { inboxTransition } from './attempt-writes.js';

const ACK_SIGNALS = { case: 'ackSignals', rpc: 'AckSignals', requestSchema: AckSignalsRequestSchema, responseSchema: AckSignalsResponseSchema } as const;

/** AckSignals: the signals delivered to this attempt up to `up_to_sequence` are acknowledged. */
export function ackSignals(subject: string, request: ReportRequest<'ackSignals'>): AttemptReport {
  const upTo = request.upToSequence;
  return attemptReport(subject, ACK_SIGNALS, request, (job, writes, now) => {
    const change = planAcknowledgement(job, upTo);
    if (change.events.length > 0) inboxTransition(writes, job, change, now);
    return create(AckSignalsResponseSchema, {});
  });
}
