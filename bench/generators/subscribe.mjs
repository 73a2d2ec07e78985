// Idle subscribers for the streams benchmark (bench/streams.mjs), in a
// process of their own so that the events process is what is measured, not
// the orchestrator holding thousands of streams. Config:
//   {url, token, jobIds: [...], watchers: n, streamsPerSession?, openConcurrency?}
// setup: opens one StreamJobEvents stream per entry of `jobIds` (an id may
// repeat: several subscribers of one job) and `watchers` WatchJobs streams,
// each counted as open once its first frame arrives (the first page of the
// journal; the `resync_required` of a feed opened without a cursor), then
// reports ready. The streams read and drop every frame until stop.
// start: reports {streams, watchers, openMs, frames, ended, failed} so far
// (may be asked more than once). stop: cancels every stream and exits.
//
// The process runs at the lowest CPU priority (nice 19; `niceness` in the
// config, BENCH_SUBSCRIBER_NICE in bench/streams.mjs, says otherwise) and
// under SCHED_IDLE (`policy: 'idle'`, the default; BENCH_SUBSCRIBER_POLICY
// =normal keeps the normal policy): in a deployment the subscribers'
// clients run on their own machines, while here they share the cores with
// the services whose latency is measured, and at 1,000 WatchJobs streams
// they decode a thousand frames per change. So placed, they still read and
// decode every frame, with the CPU the services leave.
import { setMaxListeners } from 'node:events';
import { execFileSync } from 'node:child_process';
import { setPriority } from 'node:os';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientWith } from '../docket/clients.mjs';
import { serveGenerator } from './protocol.mjs';

/** Below the events service's 1,000 concurrent streams per HTTP/2 session. */
const DEFAULT_STREAMS_PER_SESSION = 500;

/** The lowest CPU priority (see the header). */
const LOWEST_PRIORITY = 19;

/**
 * Puts every thread of this process under SCHED_IDLE (`chrt`, util-linux):
 * it then runs only on CPU no other process wants, and a service's thread
 * that wakes takes the core at once. Under nice 19 alone a woken service
 * thread could still wait out the rest of a subscriber's time slice. The
 * threads started later inherit the policy. Returns the policy in force.
 */
function idleScheduling() {
  try {
    execFileSync('chrt', ['--all-tasks', '--idle', '--pid', '0', String(process.pid)], { stdio: 'ignore' });
    return 'idle';
  } catch {
    return 'normal (chrt failed)';
  }
}

serveGenerator(async ({ url, token, jobIds = [], watchers = 0, streamsPerSession = DEFAULT_STREAMS_PER_SESSION, openConcurrency = 50, niceness = LOWEST_PRIORITY, policy = 'idle' }) => {
  setPriority(niceness);
  const scheduling = policy === 'idle' ? idleScheduling() : 'normal';
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  const total = jobIds.length + watchers;
  // One client (transport, so one HTTP/2 session) per `streamsPerSession` streams.
  const clients = Array.from({ length: Math.max(1, Math.ceil(total / streamsPerSession)) }, () => clientWith(EventService, url, token));
  const counts = { frames: 0, ended: 0, failed: 0, firstError: undefined, scheduling };
  const streams = [];

  /** Opens stream `index`; resolves when its first frame arrives, or when it fails or ends (counted, not reopened). */
  const open = (index) =>
    new Promise((resolve) => {
      const client = clients[index % clients.length];
      const stream =
        index < jobIds.length
          ? client.streamJobEvents({ jobId: jobIds[index] }, { signal: abort.signal })
          : client.watchJobs({}, { signal: abort.signal });
      let first = true;
      streams.push(
        (async () => {
          try {
            for await (const _frame of stream) {
              counts.frames += 1;
              if (first) (first = false), resolve();
            }
            counts.ended += 1;
          } catch (error) {
            if (abort.signal.aborted) return;
            counts.failed += 1;
            counts.firstError ??= String(error?.message ?? error);
          }
          if (first) (first = false), resolve(); // counted above; the others still open
        })(),
      );
    });

  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(openConcurrency, total) }, async () => {
      while (next < total) await open(next++);
    }),
  );
  const openMs = performance.now() - started;

  return {
    run: async () => ({ streams: jobIds.length, watchers, openMs, ...counts }),
    async close() {
      abort.abort();
      await Promise.all(streams);
    },
  };
});
