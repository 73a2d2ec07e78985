import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForServing } from '@docket/cli';
import { createWorker } from '@docket/worker-sdk';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { GrpcJsChannel } from './support/clients.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startDocketDev } from './support/docket-cli.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';

/*
 * Issue 35 item 5: `docket dev --one-process` runs the four services in one
 * Node process on their usual ports, the front services calling state in
 * memory. A client sees the same system: idempotent submission, a worker
 * that claims and completes, the journal streamed from events, and Ctrl-C
 * stops it cleanly.
 */

const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('docket dev --one-process', () => {
  it('serves the four services from one process on their ports, runs a job end to end, and stops on Ctrl-C', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'docket-dev-one-'));
    scratch.push(dataDir);
    const dev = await startDocketDev(['--one-process'], dataDir, await createMigratedTestDatabase('docket dev one process'));
    const { ports } = dev;
    try {
      expect(dev.err()).toBe('');
      for (const [name, port] of Object.entries(ports)) expect(dev.out()).toMatch(new RegExp(`\\n  ${name} +http://127\\.0\\.0\\.1:${port} `));
      for (const port of Object.values(ports)) await waitForServing(`http://127.0.0.1:${port}`, { timeoutMs: 30_000 });
      // One process wrote every service's lines; no service ran on its own.
      expect((await readdir(join(dataDir, 'logs'))).filter((file) => /^(state|admission|execution|events)/.test(file))).toEqual([]);
      const lines = (await readFile(join(dataDir, 'logs', 'docket.log'), 'utf8')).split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(new Set(lines.filter((line) => line['msg'] === 'listening').map((line) => line['service']))).toEqual(new Set(['state', 'admission', 'execution', 'events']));

      const admission = new GrpcJsChannel(`http://127.0.0.1:${ports.admission}`, dev.token('user'));
      const events = new GrpcJsChannel(`http://127.0.0.1:${ports.events}`, dev.token('user'));
      const queue = `one-process-${Date.now()}`;
      const worker = createWorker({ url: `http://127.0.0.1:${ports.execution}`, token: dev.token('worker'), name: 'one-process', queues: [queue], concurrency: 1, claimWaitMs: 1_000, handler: (job) => ({ doubled: Number(job.input['n']) * 2 }) });
      try {
        const request = { idempotencyKey: newIdempotencyKey('one-process'), queue, input: { n: 21 } };
        const first = await admission.unary(AdmissionService.method.submitJob, request);
        const again = await admission.unary(AdmissionService.method.submitJob, request);
        expect([first.replayed, again.replayed, again.job?.id]).toEqual([false, true, first.job?.id]);
        const jobId = first.job?.id ?? '';
        // Opened before the job runs: its live events reach events through state's change stream, in memory.
        const stream = events.serverStream(EventService.method.streamJobEvents, { jobId });
        await worker.start();
        const streamed: string[] = [];
        for (let frame = await stream.frames.next(); !frame.done; frame = await stream.frames.next()) {
          if (frame.value.frame.case === 'page') streamed.push(...frame.value.frame.value.events.map((event) => event.type));
          if (frame.value.frame.case === 'end') break;
        }
        expect(streamed).toEqual(expect.arrayContaining(['job.admitted', 'attempt.started', 'job.succeeded']));
        await until(async () => (await admission.unary(AdmissionService.method.getJob, { jobId })).job?.status === JobStatus.SUCCEEDED, 'the job to succeed');
        const done = await admission.unary(AdmissionService.method.getJob, { jobId });
        expect(done.job?.result).toEqual({ doubled: 42 });
        const page = await events.unary(EventService.method.readJobEvents, { jobId });
        expect(page.events.map((event) => event.type)).toEqual(expect.arrayContaining(['job.admitted', 'attempt.started', 'job.succeeded']));
      } finally {
        await worker.stop();
        admission.close();
        events.close();
      }

      expect(await dev.interrupt()).toBe(0);
      expect(dev.out()).toMatch(/Stopped\.\n$/);
    } finally {
      await dev.kill();
    }
  }, 150_000);
});
