import { create } from '@bufbuild/protobuf';
import { invalidField, validateEventBatch } from '@docket/contracts';
import { AppendEventsRequestSchema, AppendEventsResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { planTransition } from '../transitions/transition-plan.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { attemptEvent } from './attempt-writes.js';

const APPEND_EVENTS = { case: 'appendEvents', rpc: 'AppendEvents', requestSchema: AppendEventsRequestSchema, responseSchema: AppendEventsResponseSchema } as const;

/** AppendEvents: worker events (types under `worker.`) journaled as the current attempt; the answer is their sequence range. */
export function appendEvents(subject: string, request: ReportRequest<'appendEvents'>): AttemptReport {
  const events = request.events.map((event) => ({ type: event.type, payload: event.payload ?? {} }));
  validateEventBatch(events);
  events.forEach((event, index) => {
    if (!event.type.startsWith('worker.')) throw invalidField(`events[${index}].type`, 'must start with worker.');
  });
  return attemptReport(subject, APPEND_EVENTS, request, (job, writes, now) => {
    const planned = planTransition(job, { events: events.map((event) => attemptEvent(job, event.type, event.payload)) }, now);
    writes.transition(planned);
    return create(AppendEventsResponseSchema, { firstSequence: planned.firstSequence, lastSequence: planned.lastSequence });
  });
}
