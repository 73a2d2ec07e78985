// The parent side of the load-generator protocol (see
// bench/generators/protocol.mjs): fork generator processes, let them set up,
// start them together, collect their results, stop them.
import { fork } from 'node:child_process';
import { cpuSnapshot } from './process-cpu.mjs';

const GENERATORS = new URL('./generators/', import.meta.url).pathname;

/**
 * Forks `bench/generators/<script>` and speaks the protocol with it:
 * `ready` (set up), `start()` (a result; may be asked again), `finish()`
 * (for a generator that runs until told), `stop()`.
 */
export function forkGenerator(script, config) {
  const child = fork(`${GENERATORS}${script}`, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map();
  let failure;
  const expect = (type) => new Promise((resolve, reject) => waiting.set(type, { resolve, reject }));
  const failAll = (error) => {
    failure ??= error;
    for (const { reject } of waiting.values()) reject(failure);
    waiting.clear();
  };
  child.on('message', (message) => {
    if (message.type === 'error') return failAll(new Error(`generator ${script} failed: ${message.message}`));
    const waiter = waiting.get(message.type);
    waiting.delete(message.type);
    waiter?.resolve(message.result);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  exited.then((code) => failAll(new Error(`generator ${script} exited (code ${code})`)));
  const ask = (type, expected, body = {}) => {
    if (failure) return Promise.reject(failure);
    const answer = expect(expected);
    answer.catch(() => undefined); // a sibling's failure may leave this one unawaited
    child.send({ type, ...body });
    return answer;
  };
  return {
    pid: child.pid,
    ready: ask('setup', 'ready', { config }),
    start: () => ask('start', 'result'),
    finish: () => child.connected && child.send({ type: 'finish' }),
    async stop() {
      if (child.exitCode === null && child.connected) child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Runs one measurement: forks every `{script, config}`, waits until all are
 * set up, starts them at the same moment and resolves with their results
 * (in order). Rejects if it all takes longer than `timeoutMs` (default: no
 * limit). Every child is stopped, whatever happens. `onTimed(before,
 * after, generatorPids)`, when given, gets the machine's CPU snapshots
 * (bench/process-cpu.mjs) taken as the timed part starts and once every
 * result is in. `whileRunning(running)`, when given, is called as the timed
 * part starts with one `{pid, result, finish()}` per generator (`result`
 * its result's promise): what the orchestrator does meanwhile (restart a
 * server, tell a generator to finish); the measurement waits for it too,
 * and fails if it fails.
 */
export async function runGenerators(specs, { timeoutMs, onTimed, whileRunning } = {}) {
  const children = specs.map(({ script, config }) => forkGenerator(script, config));
  let timer;
  const deadline = new Promise((_, reject) => {
    if (timeoutMs) timer = setTimeout(() => reject(new Error(`no result within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  const measured = (async () => {
    await Promise.all(children.map((child) => child.ready));
    const before = onTimed ? cpuSnapshot() : undefined;
    const pending = children.map((child) => child.start());
    const meanwhile = whileRunning?.(children.map((child, index) => ({ pid: child.pid, result: pending[index], finish: child.finish })));
    const [results] = await Promise.all([Promise.all(pending), meanwhile]);
    if (onTimed) onTimed(before, cpuSnapshot(), children.map((child) => child.pid));
    return results;
  })();
  measured.catch(() => undefined); // after a timeout, the stopped children's failures go unread
  try {
    return await Promise.race([measured, deadline]);
  } finally {
    clearTimeout(timer);
    await Promise.all(children.map((child) => child.stop()));
  }
}
