export { headerGetter, headerSetter } from './header-carrier.js';
export { endRpcSpan, rpcAttributes, rpcSpanName, traceCall, type RpcIdentity } from './rpc-span.js';
export { tracedCalls } from './traced-calls.js';
export { isTracingRegistered } from './tracing-registered.js';
