import { create } from '@bufbuild/protobuf';
import { varintLength, writeUtf8, writeVarint } from '@docket/contracts';
import { encodedFrame } from '@docket/service-kit';
import { ReadJobEventsResponseSchema, type ReadJobEventsResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { JobEventRow } from '../db/queries/job-events.js';
import type { JsonValue } from '../db/tables/index.js';

/**
 * Journal rows written straight as `docket.common.v1.Event` protobuf, the
 * bytes `toBinary(EventSchema, eventOf(row))` gives (fields in number
 * order, the payload's keys in their order), without building an Event,
 * a Struct or a Timestamp message on the way: a backlog read answered
 * encoded (`ReadJobEventsRequest.encoded`) costs the state service one
 * pass over each row. The events are written one after another into one
 * buffer of the page's own; each event's bytes are a view of it.
 */
export function encodeEvents(rows: readonly JobEventRow[]): Uint8Array[] {
  const writer = new EventWriter(rows.length * 384);
  const ends = rows.map((row) => writer.event(row));
  const page = writer.bytes;
  let start = 0;
  return ends.map((end) => {
    const bytes = page.subarray(start, end);
    start = end;
    return bytes;
  });
}

/** What a ReadJobEvents answer says besides its events. */
export interface JournalAnswerHead {
  readonly latestSequence: bigint;
  /** `docket.common.v1.JobStatus`, as its number. */
  readonly status: number;
  readonly requestDigest: string;
}

/**
 * A ReadJobEvents answer with the events encoded (`encoded_events`), for a
 * call whose answer is written as an encoded frame (`writesEncodedFrames`):
 * a placeholder message whose frame holds the bytes
 * `toBinary(ReadJobEventsResponseSchema, ...)` gives (fields in number
 * order), the events written once, each as it is read, into one buffer
 * then copied once into the frame, where Connect would copy each event
 * into a growing protobuf writer, then the whole into a frame.
 */
export function encodedJournalAnswer(rows: readonly JobEventRow[], head: JournalAnswerHead): ReadJobEventsResponse {
  const writer = new EventWriter(rows.length * 448 + 128);
  writer.int64(LATEST_SEQUENCE_FIELD, head.latestSequence);
  writer.enum(STATUS_FIELD, head.status);
  writer.string(REQUEST_DIGEST_FIELD, head.requestDigest);
  for (const row of rows) writer.eventField(ENCODED_EVENTS_FIELD, row);
  const answer = writer.bytes.subarray(0, writer.length);
  return encodedFrame(create(ReadJobEventsResponseSchema), answer.byteLength, (into) => into.set(answer));
}

/** `docket.state.v1.ReadJobEventsResponse` field numbers. */
const LATEST_SEQUENCE_FIELD = 2;
const STATUS_FIELD = 3;
const REQUEST_DIGEST_FIELD = 4;
const ENCODED_EVENTS_FIELD = 5;

/** Writes Events into a buffer grown as needed. */
class EventWriter {
  bytes: Uint8Array;
  #view: DataView;
  #at = 0;

  constructor(capacity: number) {
    this.bytes = new Uint8Array(Math.max(capacity, 1024));
    this.#view = new DataView(this.bytes.buffer);
  }

  /** Writes `row` as an Event; returns where it ends. */
  event(row: JobEventRow): number {
    this.#string(1, row.job_id);
    this.#int64(2, row.sequence);
    this.#string(3, row.type);
    const payload = this.#open(4);
    this.#struct(row.payload);
    this.#close(payload);
    const occurredAt = this.#open(5);
    this.#timestamp(row.occurred_at.getTime());
    this.#close(occurredAt);
    this.#string(6, row.attempt_id ?? '');
    if (row.fence !== null) this.#int64(7, row.fence, true);
    this.#string(8, row.previous_hash);
    this.#string(9, row.hash);
    return this.#at;
  }

  /** `row` as an Event in message field `field` (the next element of a repeated one). */
  eventField(field: number, row: JobEventRow): void {
    const at = this.#open(field);
    this.event(row);
    this.#close(at);
  }

  /** An int64 field, omitted when 0 (proto3). */
  int64(field: number, value: bigint): void {
    this.#int64(field, value);
  }

  /** An enum field of a non-negative number, omitted when 0 (proto3). */
  enum(field: number, value: number): void {
    if (value !== 0) this.#varintField(field, value);
  }

  /** A string field, omitted when empty (proto3). */
  string(field: number, text: string): void {
    this.#string(field, text);
  }

  /** How many bytes are written. */
  get length(): number {
    return this.#at;
  }

  /** `google.protobuf.Struct`: field 1, a map entry (key 1, value 2) per key. */
  #struct(object: { readonly [key: string]: JsonValue }): void {
    for (const key of Object.keys(object)) {
      const entry = this.#open(1);
      this.#string(1, key, true);
      const value = this.#open(2);
      this.#value(object[key]!);
      this.#close(value);
      this.#close(entry);
    }
  }

  /** `google.protobuf.Value`: exactly one of its kinds, written even when it is the kind's zero. */
  #value(value: JsonValue): void {
    if (value === null) {
      this.#varintField(1, 0);
    } else if (typeof value === 'number') {
      this.#tag(2, FIXED64);
      this.#reserve(8);
      this.#view.setFloat64(this.#at, value, true);
      this.#at += 8;
    } else if (typeof value === 'string') {
      this.#string(3, value, true);
    } else if (typeof value === 'boolean') {
      this.#varintField(4, value ? 1 : 0);
    } else if (Array.isArray(value)) {
      const list = this.#open(6);
      for (const item of value) {
        const element = this.#open(1);
        this.#value(item);
        this.#close(element);
      }
      this.#close(list);
    } else {
      const struct = this.#open(5);
      this.#struct(value);
      this.#close(struct);
    }
  }

  /** `google.protobuf.Timestamp` of `ms` since the epoch, as `timestampFromMs` splits it. */
  #timestamp(ms: number): void {
    const seconds = Math.floor(ms / 1000);
    const nanos = (ms - seconds * 1000) * 1_000_000;
    if (seconds > 0) this.#varintField(1, seconds);
    else if (seconds < 0) this.#int64(1, BigInt(seconds));
    if (nanos !== 0) this.#varintField(2, nanos);
  }

  /** A varint field of a non-negative safe integer. */
  #varintField(field: number, value: number): void {
    this.#tag(field, VARINT);
    this.#varint(value);
  }

  #int64(field: number, value: bigint, always = false): void {
    if (value === 0n && !always) return;
    this.#tag(field, VARINT);
    if (value >= 0n && value <= SMALL_MAX) this.#varint(Number(value));
    else this.#bigVarint(BigInt.asUintN(64, value));
  }

  /** A string field (omitted when empty unless `always`): its UTF-8. */
  #string(field: number, text: string, always = false): void {
    if (text.length === 0 && !always) return;
    this.#tag(field, LENGTH_DELIMITED);
    this.#reserve(5 + 3 * text.length);
    // An optimistic one-byte length, widened by #close when the string is longer.
    const lengthAt = this.#at;
    this.#at = lengthAt + 1 + writeUtf8(text, this.bytes, lengthAt + 1);
    this.#close(lengthAt);
  }

  /**
   * Starts a message field (always written: a set message field, even
   * empty), with one byte reserved for its length; returns where that byte
   * is, for {@link EventWriter.#close} once the content is written.
   */
  #open(field: number): number {
    this.#tag(field, LENGTH_DELIMITED);
    this.#reserve(1);
    return this.#at++;
  }

  /** Writes the length of what follows `lengthAt`'s one reserved byte, moving it along when the length needs more. */
  #close(lengthAt: number): void {
    const length = this.#at - lengthAt - 1;
    if (length < 0x80) {
      this.bytes[lengthAt] = length;
      return;
    }
    const extra = varintLength(length) - 1;
    this.#reserve(extra);
    this.bytes.copyWithin(lengthAt + 1 + extra, lengthAt + 1, this.#at);
    const end = this.#at + extra;
    this.#at = lengthAt;
    this.#varint(length);
    this.#at = end;
  }

  #tag(field: number, wireType: number): void {
    this.#reserve(1);
    this.bytes[this.#at++] = (field << 3) | wireType;
  }

  /** A varint of a non-negative safe integer. */
  #varint(value: number): void {
    this.#reserve(8);
    this.#at = writeVarint(this.bytes, this.#at, value);
  }

  /** A varint of a 64-bit unsigned value (negative int64s as their two's complement: ten bytes). */
  #bigVarint(value: bigint): void {
    this.#reserve(10);
    while (value >= 0x80n) {
      this.bytes[this.#at++] = Number(value & 0x7fn) | 0x80;
      value >>= 7n;
    }
    this.bytes[this.#at++] = Number(value);
  }

  /** Room for `length` more bytes: a bigger buffer (the page so far copied over) when needed. */
  #reserve(length: number): void {
    if (this.#at + length <= this.bytes.byteLength) return;
    const grown = new Uint8Array(Math.max(2 * this.bytes.byteLength, this.#at + length));
    grown.set(this.bytes.subarray(0, this.#at));
    this.bytes = grown;
    this.#view = new DataView(grown.buffer);
  }
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
/** The largest int64 written through a number (exactly) rather than a bigint. */
const SMALL_MAX = BigInt(Number.MAX_SAFE_INTEGER);
