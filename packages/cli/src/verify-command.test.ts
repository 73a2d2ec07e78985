import { createServer } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { EventService, type ReadJobEventsRequest } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { runCli } from './run-cli.js';
import { verifyJob } from './verify-command.js';
import { capture } from './testing/captured-context.js';
import { refusal } from './testing/service-refusal.js';

const JOB = 'job_01jdv2x0000000000000000000';
const URL_SHOWN = 'http://events.test:7403';

/** `count` linked events; hashes are stand-ins (the server recomputes real ones). */
function linkedEvents(count: number): Event[] {
  const hashOf = (sequence: number) => sequence.toString(16).padStart(64, '0');
  return Array.from({ length: count }, (_, index) =>
    create(EventSchema, {
      jobId: JOB,
      sequence: BigInt(index + 1),
      type: 'worker.step',
      payload: { index },
      occurredAt: timestampFromDate(new Date(Date.UTC(2026, 10, 29))),
      previousHash: hashOf(index),
      hash: hashOf(index + 1),
    }),
  );
}

/** An in-memory EventService whose ReadJobEvents is `readJobEvents`, and the requests it saw. */
function fakeEvents(readJobEvents: (request: ReadJobEventsRequest) => { events: Event[]; latestSequence: bigint }) {
  const requests: ReadJobEventsRequest[] = [];
  const transport = createRouterTransport((router) => {
    router.service(EventService, {
      readJobEvents(request) {
        requests.push(request);
        return readJobEvents(request);
      },
    });
  });
  return { reader: createClient(EventService, transport), requests };
}

function servePages(events: Event[], latestSequence = BigInt(events.length)) {
  return (request: ReadJobEventsRequest) => ({
    events: events.filter((event) => event.sequence > request.afterSequence).slice(0, request.pageSize),
    latestSequence,
  });
}

function journalCorrupt(sequence: string | undefined): ConnectError {
  return refusal(Code.DataLoss, 'JOURNAL_CORRUPT', 'the job journal failed verification', sequence === undefined ? {} : { sequence });
}

describe('verifyJob', () => {
  it('reads every page after the previous one and prints the intact line (exit 0)', async () => {
    const events = linkedEvents(600);
    const { reader, requests } = fakeEvents(servePages(events));
    const context = capture();
    expect(await verifyJob(reader, JOB, URL_SHOWN, context)).toBe(0);
    expect(context.output()).toEqual({ out: `intact: ${JOB}, 600 events, head ${events[599]!.hash}\n`, err: '' });
    expect(requests.map((request) => [request.jobId, request.afterSequence, request.pageSize])).toEqual([
      [JOB, 0n, 256],
      [JOB, 256n, 256],
      [JOB, 512n, 256],
    ]);
  });

  it('prints the first broken sequence it finds itself (exit 1)', async () => {
    const events = linkedEvents(5);
    events[3]!.previousHash = events[1]!.hash;
    const { reader } = fakeEvents(servePages(events));
    const context = capture();
    expect(await verifyJob(reader, JOB, URL_SHOWN, context)).toBe(1);
    expect(context.output().out).toBe('broken at sequence 4: previous_hash does not match the hash of sequence 3\n');
  });

  it('takes the broken sequence from the server\'s JOURNAL_CORRUPT refusal (exit 1)', async () => {
    const { reader } = fakeEvents((request) => {
      if (request.afterSequence === 0n) return { events: linkedEvents(256), latestSequence: 300n };
      throw journalCorrupt('270');
    });
    const context = capture();
    expect(await verifyJob(reader, JOB, URL_SHOWN, context)).toBe(1);
    expect(context.output()).toEqual({
      out: 'broken at sequence 270: the events service refuses to serve it (DATA_LOSS, JOURNAL_CORRUPT)\n',
      err: '',
    });
  });

  it.each([
    [new ConnectError('job not found', Code.NotFound), `docket verify: job ${JOB} not found (or not visible to this token)\n`],
    [new ConnectError('connect ECONNREFUSED', Code.Unavailable), `docket verify: the events service at ${URL_SHOWN} is unavailable: connect ECONNREFUSED\n`],
    [new ConnectError('', Code.Unauthenticated), /refused the token \(UNAUTHENTICATED\): pass --token, set DOCKET_TOKEN/],
    [new ConnectError('', Code.PermissionDenied), /use a user or admin token/],
    [journalCorrupt(undefined), 'docket verify: ReadJobEvents failed with DATA_LOSS (JOURNAL_CORRUPT): the job journal failed verification\n'],
    [journalCorrupt('0'), /failed with DATA_LOSS \(JOURNAL_CORRUPT\)/],
    [new ConnectError('boom', Code.Internal), 'docket verify: ReadJobEvents failed with INTERNAL: boom\n'],
  ])('reports %s as not verified (exit 2)', async (error, message) => {
    const { reader } = fakeEvents(() => {
      throw error;
    });
    const context = capture();
    expect(await verifyJob(reader, JOB, URL_SHOWN, context)).toBe(2);
    expect(context.output().out).toBe('');
    expect(context.output().err).toMatch(message);
  });
});

describe('docket verify', () => {
  async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
    const context = { ...capture(), env };
    const code = await runCli(argv, context);
    return { code, ...context.output() };
  }

  it.each([
    [[], /a job id is required/],
    [[JOB, JOB], /one job id at a time/],
    [[JOB, '--events-url', 'localhost:7403'], /--events-url must be an http:\/\/ or https:\/\/ URL/],
    [[JOB, '--token='], /--token must not be empty/],
    [[JOB, '--follow'], /Unknown option '--follow'/],
  ])('rejects %j as a usage error (exit 2)', async (args, message) => {
    const { code, err } = await run(['verify', ...args]);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).toContain('See: docket help verify');
  });

  it('exits 2 when there is neither a token nor a secret to mint one', async () => {
    const { code, err } = await run(['verify', JOB, '--events-url', 'http://127.0.0.1:9']);
    expect(code).toBe(2);
    expect(err).toMatch(/docket verify: no signing secret: set DOCKET_AUTH_SECRET/);
  });

  it('exits 2 naming the address when nothing listens there', async () => {
    const port = await unusedPort();
    const url = `http://127.0.0.1:${port}`;
    const { code, err } = await run(['verify', JOB, '--events-url', url, '--token', 'a.b.c']);
    expect(code).toBe(2);
    expect(err).toContain(`docket verify: the events service at ${url} is unavailable`);
  });
});

async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
