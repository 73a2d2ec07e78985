// A floor for the call-machinery benchmark (bench/calls.mjs): a server that
// answers grpc.health.v1.Health/Check with SERVING and nothing else, run
// as its own process so that its CPU can be read from /proc. `bare` is
// node:http2 writing the one gRPC frame and trailers by hand; `grpc-js` is
// a @grpc/grpc-js server with a hand-registered Check. Prints the port on
// standard output once listening; exits when its parent's channel closes.
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';

/** HealthCheckResponse{status: SERVING}: field 1, varint 1. */
const SERVING = Buffer.from([0x08, 0x01]);
/** The same, as one gRPC length-prefixed message. */
const SERVING_FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, SERVING.length]), SERVING]);

const kind = process.argv[2];
const port = kind === 'bare' ? await bare() : kind === 'grpc-js' ? await grpcJs() : undefined;
if (port === undefined) throw new Error(`usage: health-server.mjs bare|grpc-js (got ${kind})`);
process.send?.({ port });
process.on('disconnect', () => process.exit(0));

async function bare() {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('data', () => {});
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(SERVING_FRAME);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server.address().port;
}

async function grpcJs() {
  const server = new grpc.Server();
  server.addService(
    {
      check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: (message) => message,
        requestDeserialize: (bytes) => bytes,
        responseSerialize: (message) => message,
        responseDeserialize: (bytes) => bytes,
      },
    },
    { check: (_call, callback) => callback(null, SERVING) },
  );
  return new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
}
