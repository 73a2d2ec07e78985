// A worker process for fault-injection tests: it speaks the execution
// service's protocol with nothing of its own (no SDK, no renewal, no retry),
// so a test can stop it (SIGSTOP), resume it (SIGCONT) or kill it (SIGKILL)
// between any two calls, and see exactly what each call was answered.
//
// Protocol, one JSON object per line. Commands on stdin:
//   {"id": 1, "method": "claimJobs", "request": {<proto3 JSON>}, "timeoutMs": 5000}
// Answers on stdout, in completion order:
//   {"id": 1, "ok": true, "response": {<proto3 JSON>}}
//   {"id": 1, "ok": false, "code": 9, "reason": "STALE_AUTHORITY"}
// `method` is any ExecutionService method name in lowerCamelCase. The
// process prints {"ready": true, "pid": <pid>} first and exits when stdin
// ends. Configuration: DOCKET_EXECUTION_URL and DOCKET_WORKER_TOKEN.
import { createInterface } from 'node:readline';
import { fromJson, toJson } from '@bufbuild/protobuf';
import { ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';

const url = process.env.DOCKET_EXECUTION_URL;
const token = process.env.DOCKET_WORKER_TOKEN;
if (!url || !token) {
  process.stderr.write('DOCKET_EXECUTION_URL and DOCKET_WORKER_TOKEN are required\n');
  process.exit(2);
}

const transport = createGrpcTransport({
  baseUrl: url,
  interceptors: [(next) => (request) => (request.header.set('authorization', `Bearer ${token}`), next(request))],
});
const client = createClient(ExecutionService, transport);

const answer = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function run(command) {
  const method = ExecutionService.method[command.method];
  if (!method) return answer({ id: command.id, ok: false, code: -1, reason: `no method ${command.method}` });
  try {
    const request = fromJson(method.input, command.request ?? {});
    const options = command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs };
    const response = await client[command.method](request, options);
    answer({ id: command.id, ok: true, response: toJson(method.output, response) });
  } catch (error) {
    const failure = ConnectError.from(error);
    const reason = failure.findDetails(ErrorInfoSchema)[0]?.reason;
    answer({ id: command.id, ok: false, code: failure.code, reason: reason ?? null });
  }
}

const lines = createInterface({ input: process.stdin });
const pending = new Set();
lines.on('line', (line) => {
  if (line.trim() === '') return;
  const call = run(JSON.parse(line)).finally(() => pending.delete(call));
  pending.add(call);
});
lines.on('close', () => {
  void Promise.allSettled([...pending]).then(() => process.exit(0));
});
answer({ ready: true, pid: process.pid });
