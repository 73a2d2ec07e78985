import { fork } from 'node:child_process';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { Health, HealthCheckRequestSchema, HealthCheckResponseSchema } from '@docket/proto/grpc/health/v1/health_pb.js';
import { callUnaryStream } from '../packages/service-kit/dist/unary-stream-client.js';

const server = fork(new URL('./floors/health-server.mjs', import.meta.url).pathname, ['bare']);
const port = await new Promise((resolve) => server.once('message', (m) => resolve(m.port)));
const url = `http://127.0.0.1:${port}`;
const N = 10000, INFLIGHT = 16;
async function drive(call) {
  let issued = 0;
  await Promise.all(Array.from({ length: INFLIGHT }, async () => { while (issued < N) { issued++; await call(); } }));
}
const connect = createClient(Health, createGrpcTransport({ baseUrl: url }));
const session = new Http2SessionManager(url);
const gj = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
const kinds = {
  connect: () => connect.check({}, { headers: { authorization: 'Bearer x' } }),
  lean: () => callUnaryStream({ session, method: Health.method.check, input: {}, header: { authorization: 'Bearer x' }, timeoutMs: 10000, signal: undefined }),
  'grpc-js': () => new Promise((res, rej) => { const md = new grpc.Metadata(); md.set('authorization', 'Bearer x'); gj.makeUnaryRequest('/grpc.health.v1.Health/Check', (v) => Buffer.from(toBinary(HealthCheckRequestSchema, v)), (b) => fromBinary(HealthCheckResponseSchema, b), create(HealthCheckRequestSchema, {}), md, {}, (e, r) => (e ? rej(e) : res(r))); }),
};
for (const rep of [1, 2]) for (const [name, call] of Object.entries(kinds)) {
  await drive(call);
  const t0 = process.cpuUsage(); const w = performance.now();
  await drive(call);
  const t = process.cpuUsage(t0);
  console.log(rep, name, 'client cpu us/call', ((t.user + t.system) / N).toFixed(0), 'wall ms', (performance.now() - w).toFixed(0));
}
server.kill(); process.exit(0);
