// The worker SDK's lease renewal overhead on a real cluster with a 2 s
// lease (renewing at a third of it): renewals per minute per running job
// against the 1/3 fraction's 90, the mean renewal latency, and the CPU of
// this process per renewal (its CPU while JOBS handlers hold their jobs,
// minus its idle rate while the same worker long-polls an empty queue; it
// includes the jobs' claims and outcomes). The schedule itself is proven on
// a fake clock in packages/worker-sdk/src/create-worker.test.ts; this
// measures what it costs. In-process, not in the default set:
// `npm run bench -- --only renewals`.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { createWorker } from '@docket/worker-sdk';
import { clientWith, startSystem } from './support.mjs';

const LEASE_MS = 2_000;
const JOBS = 8;

/** Resolves once `condition()` holds, polling; rejects after `timeoutMs`. */
async function until(condition, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await sleep(20);
  }
}

const cpuMs = (usage) => (usage.user + usage.system) / 1000;

export async function benchRenewals(options = {}) {
  const holdMs = Number(process.env.BENCH_RENEWAL_HOLD_MS ?? (options.quick ? 5_000 : 10_000));
  const system = await startSystem(['state', 'admission', 'execution'], { ...options, env: { DOCKET_LEASE_MS: String(LEASE_MS) } });
  const queue = `renewals-${randomBytes(3).toString('hex')}`;
  const worker = createWorker({
    url: system.urls.execution[0],
    token: await system.token('bench-renewer', 'worker'),
    name: queue,
    queues: [queue],
    concurrency: JOBS,
    claimWaitMs: 5_000,
    logger: { info() {}, warn() {}, error() {} },
    handler: async (job) => {
      await sleep(holdMs, undefined, { signal: job.signal });
      return {};
    },
  });
  try {
    const admission = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench'));
    await worker.start();
    // Baseline: the same worker long-polling with nothing to run.
    const idleStart = process.cpuUsage();
    await sleep(holdMs);
    const idlePerMs = cpuMs(process.cpuUsage(idleStart)) / holdMs;

    await Promise.all(Array.from({ length: JOBS }, (_, index) => admission.submitJob({ idempotencyKey: `${queue}-${index}`, queue })));
    await until(() => worker.running === JOBS, 30_000);
    const before = { ...worker.stats };
    const busyStart = process.cpuUsage();
    const startedAt = performance.now();
    await until(() => worker.running === 0, holdMs + 30_000);
    const elapsedMs = performance.now() - startedAt;
    const busyMs = cpuMs(process.cpuUsage(busyStart));

    const renewals = worker.stats.renewals - before.renewals;
    if (renewals === 0) throw new Error('no renewal happened while the handlers held their jobs');
    return [
      {
        name: `worker SDK renewals, ${JOBS} jobs held ${holdMs / 1000} s, lease ${LEASE_MS / 1000} s, fraction 1/3`,
        'per min per job': ((renewals / JOBS) * (60_000 / elapsedMs)).toFixed(1),
        'expected per min per job': 60_000 / (LEASE_MS / 3),
        renewals,
        retries: worker.stats.renewalRetries - before.renewalRetries,
        'mean latency ms': ((worker.stats.renewalLatencyMs - before.renewalLatencyMs) / renewals).toFixed(2),
        'CPU ms per renewal': ((busyMs - idlePerMs * elapsedMs) / renewals).toFixed(3),
        'CPU ms/s busy; idle': `${(busyMs / (elapsedMs / 1000)).toFixed(2)}; ${(idlePerMs * 1000).toFixed(2)}`,
      },
    ];
  } finally {
    await worker.stop();
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.table(await benchRenewals());
