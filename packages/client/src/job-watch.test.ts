import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createRouterTransport } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH, computeEventHash } from '@docket/contracts';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { EventService, type StreamJobEventsResponseSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { createClient } from './create-client.js';
import type { JobWatchFrame } from './job-watch.js';

/*
 * The client's own checks of a watched journal, against an in-memory
 * EventService that serves what the test says, including what the real
 * service never would (a forged hash, a duplicate, a stream that keeps
 * closing): so that the checks are proven to fail, not just to pass.
 */

const JOB = 'job_watchtest00000000000000';
const DIGEST = 'ab'.repeat(32);

function journal(count: number): Event[] {
  const events: Event[] = [];
  let previousHash = GENESIS_HASH;
  for (let sequence = 1; sequence <= count; sequence++) {
    const occurredAt = new Date(Date.UTC(2026, 11, 1, 10, 0, sequence));
    const payload = { index: sequence };
    const type = sequence === 1 ? 'job.admitted' : 'worker.step';
    const hash = computeEventHash({ jobId: JOB, requestDigest: DIGEST, sequence, previousHash, type, payload, occurredAt });
    events.push(create(EventSchema, { jobId: JOB, sequence: BigInt(sequence), type, payload, occurredAt: timestampFromDate(occurredAt), previousHash, hash }));
    previousHash = hash;
  }
  return events;
}

/** An EventService whose stream serves `connections[i]` on the i-th connection: frames, then either `end`, a close, or an error. */
function fakeEvents(events: Event[], connections: { from: number; to: number; then: 'end' | 'close' | ConnectError }[]) {
  const requests: bigint[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(EventService, {
      readJobEvents: (request) => ({
        events: events.filter((e) => e.sequence > request.afterSequence).slice(0, request.pageSize || 100),
        latestSequence: BigInt(events.length),
        requestDigest: DIGEST,
      }),
      async *streamJobEvents(request): AsyncGenerator<MessageInitShape<typeof StreamJobEventsResponseSchema>> {
        requests.push(request.afterSequence);
        const plan = connections[requests.length - 1] ?? { from: 0, to: 0, then: new ConnectError('no plan', Code.Unavailable) };
        const page = events.slice(plan.from, plan.to);
        if (page.length > 0) yield { frame: { case: 'page', value: { events: page } } };
        if (page.length > 0) yield { frame: { case: 'progress', value: { completedUnits: BigInt(plan.to), totalUnits: 10n } } };
        if (plan.then === 'end') yield { frame: { case: 'end', value: {} } };
        else if (plan.then instanceof ConnectError) throw plan.then;
      },
      watchJobs: async function* () {},
    });
  });
  const client = createClient({ transports: { admission: transport, events: transport }, reconnect: { tries: 4, initialDelayMs: 1, maxDelayMs: 2 } });
  return { client, requests };
}

async function collect(frames: AsyncIterable<JobWatchFrame>): Promise<{ sequences: bigint[]; error?: unknown }> {
  const sequences: bigint[] = [];
  try {
    for await (const frame of frames) if (frame.kind === 'event') sequences.push(frame.event.sequence);
  } catch (error) {
    return { sequences, error };
  }
  return { sequences };
}

describe('watch against a stand-in EventService', () => {
  it('resumes after a close and after an UNAVAILABLE from the last sequence seen, and ends at `end`', async () => {
    const events = journal(6);
    const { client, requests } = fakeEvents(events, [
      { from: 0, to: 2, then: 'close' },
      { from: 2, to: 4, then: new ConnectError('draining', Code.Unavailable) },
      { from: 4, to: 6, then: 'end' },
    ]);
    const kinds: string[] = [];
    for await (const frame of client.watch(JOB)) kinds.push(frame.kind === 'event' ? `event:${frame.event.sequence}` : `progress:${frame.progress.completedUnits}`);
    expect(kinds).toEqual(['event:1', 'event:2', 'progress:2', 'event:3', 'event:4', 'progress:4', 'event:5', 'event:6', 'progress:6']);
    expect(requests).toEqual([0n, 2n, 4n]);
  });

  it('refuses a forged hash with JOURNAL_CORRUPT (detected_by client), yielding nothing from the break on', async () => {
    const events = journal(5);
    events[2]!.payload = { index: 3, amount: 1_000_000 };
    const { client } = fakeEvents(events, [{ from: 0, to: 5, then: 'end' }]);
    const { sequences, error } = await collect(client.watch(JOB));
    expect(sequences).toEqual([]);
    expect(error).toMatchObject({ name: 'DocketClientError', code: Code.DataLoss, reason: 'JOURNAL_CORRUPT', metadata: { sequence: '3', why: 'hash_mismatch', detected_by: 'client' } });
  });

  it('refuses a duplicate across a reconnect as a sequence gap', async () => {
    const events = journal(4);
    const { client } = fakeEvents(events, [
      { from: 0, to: 2, then: 'close' },
      { from: 1, to: 4, then: 'end' },
    ]);
    const { sequences, error } = await collect(client.watch(JOB));
    expect(sequences).toEqual([1n, 2n]);
    expect(error).toMatchObject({ reason: 'JOURNAL_CORRUPT', metadata: { sequence: '3', why: 'sequence_gap' } });
  });

  it('starts after a given sequence, anchored on that event', async () => {
    const events = journal(5);
    const { client, requests } = fakeEvents(events, [{ from: 3, to: 5, then: 'end' }]);
    expect(await collect(client.watch(JOB, { afterSequence: 3 }))).toEqual({ sequences: [4n, 5n] });
    expect(requests).toEqual([3n]);
  });

  it('gives up after `tries` reconnections without a frame, and does not retry a refusal', async () => {
    const { client, requests } = fakeEvents(journal(2), []);
    const { error } = await collect(client.watch(JOB));
    expect(error).toMatchObject({ code: Code.Unavailable });
    expect(requests).toHaveLength(4);

    const refused = fakeEvents(journal(2), [{ from: 0, to: 0, then: new ConnectError('gone', Code.NotFound) }]);
    expect((await collect(refused.client.watch(JOB))).error).toMatchObject({ code: Code.NotFound });
    expect(refused.requests).toHaveLength(1);
  });
});
