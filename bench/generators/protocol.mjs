// The child side of the load-generator protocol. Every measurement's load
// runs in a process of its own (forked by bench/generator-host.mjs), away
// from the orchestrator that reads the service logs. Messages, as JSON over
// the IPC channel:
//
//   parent -> child  {type:'setup', config}   connect, warm up, seed; untimed
//   child  -> parent {type:'ready'}
//   parent -> child  {type:'start'}           the timed part
//   parent -> child  {type:'finish'}          for a generator that runs until told (the
//                                             fixed-rate worker): end the timed part now
//   child  -> parent {type:'result', result}  {count, startedAt, endedAt, latencies summary, ...}
//   parent -> child  {type:'stop'}            close connections and exit 0
//   child  -> parent {type:'error', message}  at any point, then exit 1
//
// Times cross process boundaries as wall-clock epoch milliseconds with
// sub-millisecond precision (`wallClock`), so that a producer process and a
// consumer process can be measured from first submit to last completion.

/** Epoch milliseconds, sub-millisecond precision, comparable across processes on one machine. */
export const wallClock = () => performance.timeOrigin + performance.now();

/**
 * Serves the protocol in a generator process. `prepare(config)` does the
 * untimed set-up and resolves with `{ run(): Promise<result>, close():
 * Promise<void>, finish?() }`. An unhandled rejection fails the generator,
 * unless `onUnhandledRejection(reason)` is given (a peer library whose own
 * loop leaves a promise unawaited: counted and reported rather than fatal).
 */
export function serveGenerator(prepare, { onUnhandledRejection } = {}) {
  if (!process.send) throw new Error('a load generator runs as a forked child of bench/run.mjs');
  let prepared;
  const fail = (error) => {
    process.send({ type: 'error', message: error?.stack ?? String(error) }, () => process.exit(1));
  };
  process.on('unhandledRejection', onUnhandledRejection ?? fail);
  process.on('disconnect', () => process.exit(1)); // the orchestrator is gone
  process.on('message', async (message) => {
    try {
      if (message.type === 'setup') {
        prepared = await prepare(message.config);
        process.send({ type: 'ready' });
      } else if (message.type === 'start') {
        process.send({ type: 'result', result: await prepared.run() });
      } else if (message.type === 'finish') {
        prepared?.finish?.();
      } else if (message.type === 'stop') {
        await prepared?.close();
        process.exit(0);
      }
    } catch (error) {
      fail(error);
    }
  });
}
