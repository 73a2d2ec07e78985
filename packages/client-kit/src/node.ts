/**
 * `@docket/client-kit/node`: what only Node callers share, kept out of the
 * main entry so that browsers (the console, through the client's browser
 * entry) never load connect-node.
 */
export { createServiceConnection, type ServiceConnection, type ServiceConnectionOptions } from './service-connection.js';
export { frameFor, grpcFrame } from './grpc-frame.js';
export { receivedHeaders } from './received-headers.js';
export { callUnaryStream, headerFields, type UnaryStreamCall } from './unary-stream-client.js';
export { callBidiStream, type BidiStreamCall } from './bidi-stream-client.js';
