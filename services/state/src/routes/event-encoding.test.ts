import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { EventSchema } from '@docket/proto/docket/common/v1/event_pb.js';
import { ReadJobEventsResponseSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { frameOf } from '@docket/service-kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JobEventRow } from '../db/queries/job-events.js';
import type { JsonObject } from '../db/tables/index.js';
import { encodeEvents, encodedJournalAnswer } from './event-encoding.js';
import { eventOf } from '../journal/read-job-events.js';

/** Journal rows as the state pool reads them (int8 as bigint): any JSON payload, unicode text, nulls, long strings, dates on either side of 1970. */
const rowArbitrary: fc.Arbitrary<JobEventRow> = fc.record({
  job_id: fc.string({ unit: 'grapheme', maxLength: 40 }),
  sequence: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
  type: fc.oneof(fc.constant('worker.step'), fc.string({ unit: 'binary', maxLength: 300 })),
  payload: fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.jsonValue({ maxDepth: 4 })) as fc.Arbitrary<JsonObject>,
  occurred_at: fc.date({ min: new Date('1900-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }),
  attempt_id: fc.option(fc.string({ maxLength: 30 })),
  fence: fc.option(fc.bigInt({ min: 0n, max: 2n ** 63n - 1n })),
  previous_hash: fc.stringMatching(/^[0-9a-f]{64}$/),
  hash: fc.stringMatching(/^[0-9a-f]{64}$/),
});

describe('encodeEvents', () => {
  it('writes each row as exactly the bytes of its Event message, whatever the payload', () => {
    fc.assert(
      fc.property(fc.array(rowArbitrary, { maxLength: 12 }), (rows) => {
        const encoded = encodeEvents(rows);
        expect(encoded).toHaveLength(rows.length);
        rows.forEach((row, index) => {
          expect(Buffer.from(encoded[index]!).equals(Buffer.from(toBinary(EventSchema, eventOf(row))))).toBe(true);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('widens a length that needs more than one byte (128 B, 16 KiB, 2 MiB strings) and grows its buffer over a page, each event still its own', () => {
    const row = (sequence: number, note: string): JobEventRow => ({
      job_id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      sequence: BigInt(sequence),
      type: 'worker.step',
      payload: { note, nested: { list: [note, 1.5, -0, null, true, { deep: [] }] }, empty: {} },
      occurred_at: new Date('2026-12-03T08:00:00.123Z'),
      attempt_id: null,
      fence: 0n,
      previous_hash: '0'.repeat(64),
      hash: 'f'.repeat(64),
    });
    const rows = [row(1, 'x'.repeat(128)), row(2, 'é'.repeat(8_200)), row(3, '😀'.repeat(600_000)), ...Array.from({ length: 1_024 }, (_, n) => row(n + 4, `n${n}`))];
    const encoded = encodeEvents(rows);
    rows.forEach((one, index) => {
      expect(Buffer.from(encoded[index]!).equals(Buffer.from(toBinary(EventSchema, eventOf(one))))).toBe(true);
    });
    expect(fromBinary(EventSchema, encoded[2]!).payload).toEqual(rows[2]!.payload);
  });
});

describe('encodedJournalAnswer', () => {
  it('frames exactly the bytes of the ReadJobEvents answer with those events encoded, whatever the rows and head', () => {
    fc.assert(
      fc.property(
        fc.array(rowArbitrary, { maxLength: 12 }),
        fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
        fc.integer({ min: 0, max: 7 }),
        fc.oneof(fc.constant(''), fc.stringMatching(/^[0-9a-f]{64}$/)),
        (rows, latestSequence, status, requestDigest) => {
          const answer = encodedJournalAnswer(rows, { latestSequence, status, requestDigest });
          const frame = frameOf(answer, () => {
            throw new Error('the answer has no frame of its own');
          });
          const expected = toBinary(ReadJobEventsResponseSchema, create(ReadJobEventsResponseSchema, { encodedEvents: encodeEvents(rows), latestSequence, status, requestDigest }));
          expect(frame.readUInt32BE(1)).toBe(expected.byteLength);
          expect(Buffer.from(frame.subarray(5)).equals(Buffer.from(expected))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
