import { create } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { StatusSchema, type Status } from '@docket/proto/google/rpc/status_pb.js';
import { toConnectError } from './error-mapping.js';
import type { LogFields, Logger } from './logger.js';

const TYPE_URL_PREFIX = 'type.googleapis.com/';

/**
 * One item of a batched internal call that failed, as the `google.rpc.Status`
 * the batch answer carries for it: exactly what the unary call would have
 * put on the wire (code, message, ErrorInfo and BadRequest details), via
 * the same mapping (`toConnectError`), so nothing internal leaves.
 */
export function statusOfFailure(error: unknown, logger: Logger, fields?: LogFields): Status {
  const failure = toConnectError(error, logger, fields);
  return create(StatusSchema, {
    code: failure.code,
    message: failure.rawMessage,
    details: failure.details.map((detail) =>
      'desc' in detail
        ? anyPack(detail.desc, create(detail.desc, detail.value))
        : { typeUrl: `${TYPE_URL_PREFIX}${detail.type}`, value: detail.value },
    ),
  });
}
