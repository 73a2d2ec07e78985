import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { EventSchema } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StreamJobEventsResponseSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ReadJobEventsResponseSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { frameOf } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import { JournalPage } from './journal-page.js';
import { encodedAnswer } from '../testing/encoded-answer.js';

/** A state answer of `count` events from `first`, payloads and all. */
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
    const page = new JournalPage(encodedAnswer(answer));
    expect(page.sequences).toEqual([2n ** 60n, 2n ** 60n + 1n, 2n ** 60n + 2n]);
    expect(page.lastSequence).toBe(2n ** 60n + 2n);
    expect(page.latestSequence).toBe(2n ** 60n + 13n);
    expect(page.status).toBe(JobStatus.RUNNING);
    expect(page.events()).toEqual(answer.events);
    for (const first of [1n, 127n, 16_383n, 2n ** 49n - 2n, 2n ** 53n - 2n]) {
      expect(new JournalPage(encodedAnswer(stateAnswer(first, 4))).sequences).toEqual([first, first + 1n, first + 2n, first + 3n]);
    }
  });

  it('frames a read of several pages as frames of 256 events, from the events’ own bytes exactly as encoding the decoded frames would, once for every tail', () => {
    const answer = stateAnswer(1n, 600);
    const page = new JournalPage(encodedAnswer(answer));
    const decoded = page.frames(false);
    const encoded = page.frames(true);
    expect(page.frames(true)).toBe(encoded);
    expect(page.frames(false)).toBe(decoded);
    expect(decoded.map((frame) => frame.sequences.length)).toEqual([256, 256, 88]);
    expect(encoded.flatMap((frame) => frame.sequences)).toEqual(page.sequences);
    encoded.forEach((frame, index) => {
      const expected = toBinary(StreamJobEventsResponseSchema, decoded[index]!.response);
      expect(frame.sequences).toEqual(decoded[index]!.sequences);
      const bytes = frameOf(frame.response, () => {
        throw new Error('an encoded page frame is never encoded again');
      });
      expect(bytes.readUInt32BE(1)).toBe(expected.byteLength);
      expect(Buffer.from(bytes.subarray(5)).equals(Buffer.from(expected))).toBe(true);
      const sent = fromBinary(StreamJobEventsResponseSchema, bytes.subarray(5));
      expect(sent).toEqual(decoded[index]!.response);
      expect(sent.frame.case === 'page' && sent.frame.value.events.map((event) => event.sequence)).toEqual(frame.sequences);
    });
  });

  it('takes a page of decoded events, as a state service from before `encoded` answers, as the same page', () => {
    const answer = stateAnswer(5n, 300);
    const fromOlder = new JournalPage(answer);
    const encoded = new JournalPage(encodedAnswer(answer));
    expect(fromOlder.sequences).toEqual(encoded.sequences);
    expect(fromOlder.events()).toEqual(answer.events);
    const bytes = (page: JournalPage) => page.frames(true).map((frame) => Buffer.from(frameOf(frame.response, () => Buffer.alloc(0))).toString('hex'));
    expect(bytes(fromOlder)).toEqual(bytes(encoded));
  });

  it('reads an event without a sequence as 0 and refuses bytes that are not protobuf', () => {
    const page = new JournalPage(encodedAnswer(create(ReadJobEventsResponseSchema, { events: [create(EventSchema, { type: 'x' })] })));
    expect(page.sequences).toEqual([0n]);
    // An event whose only tag claims a length past its end.
    expect(() => new JournalPage(create(ReadJobEventsResponseSchema, { encodedEvents: [Uint8Array.from([0x12, 0x05])] }))).toThrow('not valid protobuf');
  });
});
