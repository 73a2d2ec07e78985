import { ConnectError } from '@connectrpc/connect';
import { hookStream } from '@docket/contracts';
import { context, SpanStatusCode, type Attributes, type Context, type Span } from '@opentelemetry/api';

/** What names an RPC: the fields of a Connect request that spans are named and tagged by. */
export interface RpcIdentity {
  readonly service: { readonly typeName: string };
  readonly method: { readonly name: string };
}

/** A span's name for an RPC, as the OpenTelemetry RPC conventions spell it: `docket.v1.AdmissionService/SubmitJob`. */
export function rpcSpanName(rpc: RpcIdentity): string {
  return `${rpc.service.typeName}/${rpc.method.name}`;
}

/** The attributes every RPC span carries (never a header, body or message). */
export function rpcAttributes(rpc: RpcIdentity): Attributes {
  return { 'rpc.system': 'connect_rpc', 'rpc.service': rpc.service.typeName, 'rpc.method': rpc.method.name };
}

/**
 * Ends `span` with the outcome of its RPC: OK, or ERROR with the Connect
 * code as `rpc.connect_rpc.error_code`. The error's message is not
 * recorded (it may carry what a log line may not).
 */
export function endRpcSpan(span: Span, error?: unknown): void {
  if (error === undefined) {
    span.setStatus({ code: SpanStatusCode.OK });
  } else {
    const code = ConnectError.from(error).code;
    span.setAttribute('rpc.connect_rpc.error_code', code);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** The part of a Connect response that {@link traceCall} looks at. */
type RpcResponse = { readonly stream: false } | { readonly stream: true; readonly message: AsyncIterable<unknown> };

/**
 * Runs one RPC inside `span`: the call (and, for a response stream, each
 * pull of it) runs with `callContext` active, and the span ends with the
 * call's outcome, or when the stream completes, fails or is abandoned.
 */
export async function traceCall<R extends RpcResponse>(span: Span, callContext: Context, call: () => Promise<R>): Promise<R> {
  let response: R;
  try {
    response = await context.with(callContext, call);
  } catch (error) {
    endRpcSpan(span, error);
    throw error;
  }
  if (!response.stream) {
    endRpcSpan(span);
    return response;
  }
  return {
    ...response,
    message: hookStream(response.message, {
      around: (pull) => context.with(callContext, pull),
      onSettled: (end) => endRpcSpan(span, end.kind === 'failed' ? end.error : undefined),
    }),
  };
}
