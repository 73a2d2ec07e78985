import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { GENESIS_HASH, sealEvent, type JsonValue, type StoredEvent } from '@docket/contracts';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';

/**
 * A real journal of `count` events of one job, sealed by the code the
 * services seal with (`sealEvent`), as public `Event` messages: sequence 1
 * is `job.admitted`, the rest `worker.step`, one second apart (at a
 * millisecond offset, which the hash covers), each with the payload
 * `payloadOf(sequence)` gives.
 */
export function sealedJournal(
  jobId: string,
  requestDigest: string,
  count: number,
  payloadOf: (sequence: number) => { [k: string]: JsonValue } = (sequence) => ({ step: sequence, note: 'ünïcødé ✓ 😀' }),
): Event[] {
  const stored: StoredEvent[] = [];
  for (let sequence = 1; sequence <= count; sequence++) {
    stored.push(
      sealEvent({
        jobId,
        requestDigest,
        sequence: BigInt(sequence),
        previousHash: stored.at(-1)?.hash ?? GENESIS_HASH,
        type: sequence === 1 ? 'job.admitted' : 'worker.step',
        payload: payloadOf(sequence),
        occurredAt: new Date(Date.UTC(2026, 11, 1, 12, 0, sequence, 123)),
      }),
    );
  }
  return stored.map((event) =>
    create(EventSchema, {
      jobId: event.jobId,
      sequence: BigInt(event.sequence),
      type: event.type,
      payload: event.payload,
      occurredAt: timestampFromDate(event.occurredAt),
      previousHash: event.previousHash,
      hash: event.hash,
    }),
  );
}
