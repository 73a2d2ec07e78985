import { create, fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import type { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StreamJobEventsResponseSchema, type StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import type { ReadJobEventsRequestSchema, ReadJobEventsResponse, StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { LIMITS, varintLength, writeVarint } from '@docket/contracts';
import { encodedFrame } from '@docket/service-kit';

/** What a journal read asks the state service. */
export type JournalPageRequest = MessageInitShape<typeof ReadJobEventsRequestSchema>;

/** Reads one journal page from the state service. */
export type JournalPageReader = (request: JournalPageRequest, options: { signal?: AbortSignal; timeoutMs: number }) => Promise<JournalPage>;

/** A {@link JournalPageReader} over the state service's client: ReadJobEvents, its events answered encoded. */
export function journalPageReader(state: Client<typeof StateService>): JournalPageReader {
  return async (request, options) => new JournalPage(await state.readJobEvents({ ...request, encoded: true }, options));
}

/**
 * One page of a job's journal as the state service sent it (verified
 * there): each event still encoded, with its sequence read off the wire.
 * Tails of one job at one cursor share one page, so what is derived from
 * it (the decoded events, the StreamJobEvents frame) is made once, when
 * first asked for.
 */
export class JournalPage {
  readonly latestSequence: bigint;
  readonly status: JobStatus;
  /** The events' sequences, in page order. */
  readonly sequences: readonly bigint[];
  readonly #events: readonly Uint8Array[];
  #decoded: Event[] | undefined;
  #frames: JournalFrame[] | undefined;
  #encodedFrames: JournalFrame[] | undefined;

  /**
   * `response` holds the events encoded (`ReadJobEventsRequest.encoded`),
   * or, from a state service that predates `encoded` (a rolling upgrade),
   * decoded: those are encoded here, so a page is never mistaken for empty.
   */
  constructor(response: ReadJobEventsResponse) {
    this.latestSequence = response.latestSequence;
    this.status = response.status;
    this.#events = response.encodedEvents.length > 0 ? response.encodedEvents : response.events.map((event) => toBinary(EventSchema, event));
    this.sequences = this.#events.map(sequenceOf);
  }

  get lastSequence(): bigint | undefined {
    return this.sequences.at(-1);
  }

  /** The events, decoded (once). */
  events(): Event[] {
    return (this.#decoded ??= this.#events.map((bytes) => fromBinary(EventSchema, bytes)));
  }

  /**
   * The `page` frames of StreamJobEvents carrying these events, at most 256
   * events each (a read answers up to eight pages at once). With `encoded`,
   * for a stream whose messages are written as encoded frames (binary
   * gRPC, see `encodedFrame`), a frame is its events' own bytes put
   * together, and nothing is decoded; otherwise it is a decoded message.
   * Either is made once per page and shared by every tail.
   */
  frames(encoded: boolean): readonly JournalFrame[] {
    if (encoded) {
      return (this.#encodedFrames ??= this.#split((from, to) => {
        const events = this.#events.slice(from, to);
        return encodedFrame(create(StreamJobEventsResponseSchema), pageFrameLength(events), (into) => writePageFrame(events, into));
      }));
    }
    return (this.#frames ??= this.#split((from, to) => create(StreamJobEventsResponseSchema, { frame: { case: 'page', value: { events: this.events().slice(from, to) } } })));
  }

  #split(frameOf: (from: number, to: number) => StreamJobEventsResponse): JournalFrame[] {
    const frames: JournalFrame[] = [];
    for (let from = 0; from < this.sequences.length; from += LIMITS.eventPageMax) {
      const to = Math.min(from + LIMITS.eventPageMax, this.sequences.length);
      frames.push({ sequences: this.sequences.slice(from, to), response: frameOf(from, to) });
    }
    return frames;
  }
}

/** One StreamJobEvents `page` frame of a {@link JournalPage}, with the sequences it carries. */
export interface JournalFrame {
  readonly sequences: readonly bigint[];
  readonly response: StreamJobEventsResponse;
}

/**
 * The encoding of `StreamJobEventsResponse { page: EventPage { events } }`
 * from the encoded events: field 1 (page) holding field 1 (events) once per
 * event. {@link pageFrameLength} is its length, {@link writePageFrame}
 * writes it.
 */
function pageFrameLength(events: readonly Uint8Array[]): number {
  const pageLength = eventsLength(events);
  return 1 + varintLength(pageLength) + pageLength;
}

function writePageFrame(events: readonly Uint8Array[], out: Uint8Array): void {
  let at = 0;
  out[at++] = FIELD_1_LEN;
  at = writeVarint(out, at, eventsLength(events));
  for (const event of events) {
    out[at++] = FIELD_1_LEN;
    at = writeVarint(out, at, event.byteLength);
    out.set(event, at);
    at += event.byteLength;
  }
}

/** The length of the page's content: each event as a length-delimited field 1. */
function eventsLength(events: readonly Uint8Array[]): number {
  let length = 0;
  for (const event of events) length += 1 + varintLength(event.byteLength) + event.byteLength;
  return length;
}

/** The tag of field 1, length-delimited. */
const FIELD_1_LEN = (1 << 3) | 2;
/** `docket.common.v1.Event.sequence`. */
const SEQUENCE_FIELD = 2;
/** Its tag (a varint). */
const SEQUENCE_TAG = SEQUENCE_FIELD << 3;

/**
 * An encoded Event's `sequence` (0 when absent, as proto3 reads it). The
 * state service writes `job_id` (field 1, under 128 bytes) then `sequence`
 * first, so the sequence is read right there; any other layout is scanned
 * field by field, which also checks that the event is well formed.
 */
function sequenceOf(event: Uint8Array): bigint {
  const afterJobId = event[0] === FIELD_1_LEN && event[1]! < 0x80 ? 2 + event[1]! : -1;
  if (afterJobId > 0 && event[afterJobId] === SEQUENCE_TAG) {
    let value = 0;
    let scale = 1;
    for (let at = afterJobId + 1; at < event.byteLength && at < afterJobId + 8; at += 1) {
      const byte = event[at]!;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return BigInt(value);
      scale *= 0x80;
    }
  }
  return scanSequence(event);
}

/** {@link sequenceOf} the long way: every field read, the event's bytes checked to end where its last field does. */
function scanSequence(event: Uint8Array): bigint {
  let at = 0;
  let sequence = 0n;
  while (at < event.byteLength) {
    const tag = readSmallVarint(event, at);
    at = tag.next;
    switch (tag.value & 7) {
      case 0: {
        if (tag.value >>> 3 === SEQUENCE_FIELD) {
          const value = readVarint(event, at);
          sequence = BigInt.asIntN(64, value.value);
          at = value.next;
        } else {
          at = readVarint(event, at).next;
        }
        break;
      }
      case 1:
        at += 8;
        break;
      case 2: {
        const length = readSmallVarint(event, at);
        at = length.next + length.value;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        throw invalidEvent();
    }
  }
  if (at !== event.byteLength) throw invalidEvent();
  return sequence;
}

/** A varint that fits a double exactly (tags and lengths). */
function readSmallVarint(bytes: Uint8Array, from: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (let at = from; at < bytes.byteLength && scale < 2 ** 49; at += 1) {
    const byte = bytes[at]!;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return { value, next: at + 1 };
    scale *= 0x80;
  }
  throw invalidEvent();
}

function readVarint(bytes: Uint8Array, from: number): { value: bigint; next: number } {
  let value = 0n;
  let shift = 0n;
  for (let at = from; at < bytes.byteLength && shift < 70n; at += 1) {
    const byte = bytes[at]!;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value, next: at + 1 };
    shift += 7n;
  }
  throw invalidEvent();
}

function invalidEvent(): Error {
  return new Error('an event of the journal page is not valid protobuf');
}
