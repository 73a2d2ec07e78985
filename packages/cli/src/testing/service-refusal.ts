import { ConnectError, type Code } from '@connectrpc/connect';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';

/** A refusal as a Docket service sends it: `code`, `message`, and an ErrorInfo in the `docket` domain with `reason` and `metadata`. */
export function refusal(code: Code, reason: string, message: string, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError(message, code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket', metadata } }]);
}
