import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { EventSchema } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StreamJobEventsResponseSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ReadJobEventsResponseSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { frameOf } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import { JournalPage } from './journal-page.js';

/** A state answer of `count` events from `first`, payloads and all, as the state service encodes it. */
function stateAnswer(first: bigint, count: number) {
  return create(ReadJobEventsResponseSchema, {
    events: Array.from({ length: count }, (_, index) =>
      create(EventSchema, {
        jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
        sequence: first + BigInt(index),
        type: 'worker.step',
        payload: { n: index, note: 'é'.repeat(200), nested: { list: [1, 'two', null, true] } },
        occurredAt: { seconds: 1_700_000_000n, nanos: 123_000 },
        attemptId: 'att_1',
        fence: 7n,
        previousHash: 'a'.repeat(64),
        hash: 'b'.repeat(64),
      }),
    ),
    latestSequence: first + BigInt(count) + 10n,
    status: JobStatus.RUNNING,
    requestDigest: 'digest',
  });
}

describe('JournalPage', () => {
  it('reads the head and each event’s sequence off the encoded answer, sequences past 2^53 included', () => {
    const answer = stateAnswer(2n ** 60n, 3);
    const page = JournalPage.fromResponseBytes(toBinary(ReadJobEventsResponseSchema, answer));
    expect(page.sequences).toEqual([2n ** 60n, 2n ** 60n + 1n, 2n ** 60n + 2n]);
    expect(page.lastSequence).toBe(2n ** 60n + 2n);
    expect(page.latestSequence).toBe(2n ** 60n + 13n);
    expect(page.status).toBe(JobStatus.RUNNING);
    expect(page.events()).toEqual(answer.events);
  });

  it('frames a page from the events’ own bytes exactly as encoding the decoded page would, once for every tail', () => {
    const answer = stateAnswer(1n, 256);
    const page = JournalPage.fromResponseBytes(toBinary(ReadJobEventsResponseSchema, answer));
    const decoded = page.frame(false);
    const expected = toBinary(StreamJobEventsResponseSchema, decoded);
    const encoded = page.frame(true);
    expect(page.frame(true)).toBe(encoded);
    const frame = frameOf(encoded, () => {
      throw new Error('an encoded page frame is never encoded again');
    });
    expect(frame.readUInt32BE(1)).toBe(expected.byteLength);
    expect(Buffer.from(frame.subarray(5)).equals(Buffer.from(expected))).toBe(true);
    expect(fromBinary(StreamJobEventsResponseSchema, frame.subarray(5))).toEqual(decoded);
  });

  it('reads an event without a sequence as 0 and refuses bytes that are not protobuf', () => {
    const page = JournalPage.fromResponseBytes(toBinary(ReadJobEventsResponseSchema, create(ReadJobEventsResponseSchema, { events: [create(EventSchema, { type: 'x' })] })));
    expect(page.sequences).toEqual([0n]);
    // Field 1 of the answer holding one event whose only tag claims a length past its end.
    expect(() => JournalPage.fromResponseBytes(Uint8Array.from([0x0a, 0x02, 0x12, 0x05]))).toThrow('not valid protobuf');
  });
});
