import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { EventSchema } from '@docket/proto/docket/common/v1/event_pb.js';
import { ReadJobEventsResponseSchema, type ReadJobEventsResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';

/**
 * `answer` as the state service gives it to a read that asked for encoded
 * events (each event's bytes in `encoded_events`), read off the wire as the
 * events process reads it: for the unit tests that stand in for the state
 * service with decoded events.
 */
export function encodedAnswer(answer: ReadJobEventsResponse): ReadJobEventsResponse {
  const sent = create(ReadJobEventsResponseSchema, { ...answer, events: [], encodedEvents: answer.events.map((event) => toBinary(EventSchema, event)) });
  return fromBinary(ReadJobEventsResponseSchema, toBinary(ReadJobEventsResponseSchema, sent));
}
