// `node bench/profile-calls.mjs <health|get|submit> [calls] [service]`:
// where one kind of call spends a Docket service's CPU. Starts the durable
// PostgreSQL and the four services with `node --cpu-prof`, sends `calls`
// calls (default 20,000) from a plain @grpc/grpc-js client, 16 in flight,
// to `service` (default admission; Health/Check may go to any of them),
// then stops the services (which writes the profiles) and prints each
// service's CPU per call, its heaviest functions by self time and the
// same time by package or module (`PROFILE_TOP=N` for more lines). What
// the profiles showed is in docs/benchmarks.md ("Call costs").
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { GetJobRequestSchema, GetJobResponseSchema, SubmitJobRequestSchema, SubmitJobResponseSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { HealthCheckRequestSchema, HealthCheckResponseSchema } from '@docket/proto/grpc/health/v1/health_pb.js';
import { printCpuProfiles } from './cpu-profile-summary.mjs';
import { launchDocket } from './docket/instance.mjs';
import { startDurablePostgres } from './postgres.mjs';

const [kind = 'health', callsText = '20000', service = 'admission'] = process.argv.slice(2);
const calls = Number(callsText);
const IN_FLIGHT = 16;
const WARM_UP = 2_000;
if (!['health', 'get', 'submit'].includes(kind) || !Number.isInteger(calls) || calls < 1) {
  console.error('usage: node bench/profile-calls.mjs <health|get|submit> [calls] [service]');
  process.exit(2);
}

const profiles = mkdtempSync(join(tmpdir(), 'docket-call-profile-'));
const postgres = await startDurablePostgres();
const docket = await launchDocket({
  root: new URL('..', import.meta.url).pathname,
  databaseUrl: await postgres.createDatabase('profile_calls'),
  names: ['state', 'admission', 'execution', 'events'],
  nodeOptions: ['--cpu-prof', `--cpu-prof-dir=${profiles}`],
});
const labels = Object.fromEntries(Object.entries(docket.pids).flatMap(([name, pids]) => pids.map((pid) => [pid, name])));
let sent = 0;
try {
  const client = new grpc.Client(new URL(docket.urls[kind === 'health' ? service : 'admission'][0]).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${await docket.token('profile-calls', 'user')}`);
  const unary = (path, input, output, message) =>
    new Promise((resolve, reject) =>
      client.makeUnaryRequest(path, (value) => Buffer.from(toBinary(input, value)), (bytes) => fromBinary(output, bytes), message, metadata, {}, (error, response) => (error ? reject(error) : resolve(response))),
    );
  const submit = () =>
    unary('/docket.admission.v1.AdmissionService/SubmitJob', SubmitJobRequestSchema, SubmitJobResponseSchema, create(SubmitJobRequestSchema, { idempotencyKey: `profile-calls-${process.pid}-${(sent += 1)}`, queue: 'profile', input: { sent } }));
  const jobId = kind === 'get' ? (await submit()).job.id : undefined;
  const one = {
    health: () => unary('/grpc.health.v1.Health/Check', HealthCheckRequestSchema, HealthCheckResponseSchema, create(HealthCheckRequestSchema, {})),
    get: () => unary('/docket.admission.v1.AdmissionService/GetJob', GetJobRequestSchema, GetJobResponseSchema, create(GetJobRequestSchema, { jobId })),
    submit,
  }[kind];
  const drive = async (count) => {
    let issued = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < count) {
        issued += 1;
        await one();
      }
    }));
  };
  await drive(WARM_UP);
  const started = performance.now();
  await drive(calls);
  console.log(`${kind} to ${kind === 'health' ? service : 'admission'}: ${calls} calls in ${Math.round(performance.now() - started)} ms (the profiles include ${WARM_UP} warm-up calls and start-up)`);
  client.close();
} finally {
  await docket.stop();
  await postgres.stop();
}
printCpuProfiles(profiles, { count: calls + WARM_UP, name: 'call' }, Number(process.env.PROFILE_TOP ?? 18), undefined, labels);
