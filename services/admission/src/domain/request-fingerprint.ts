import { clone, toJson, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { computeRequestDigest, type JsonValue, type RequestDigest } from '@docket/contracts';

/**
 * The request digest of SPEC section 2, computed from the authenticated
 * request: sha256(JCS({"operation", "subject", "request"})) where request is
 * the proto3 JSON (default options) of the message with idempotency_key
 * cleared. Any client can recompute it (docs/idempotency.md shows how).
 */
export function fingerprintRequest<Desc extends DescMessage>(
  schema: Desc,
  request: MessageShape<Desc> & { idempotencyKey: string },
  operation: string,
  subject: string,
): RequestDigest {
  const withoutKey = clone(schema, request) as MessageShape<Desc> & { idempotencyKey: string };
  withoutKey.idempotencyKey = '';
  return computeRequestDigest({ operation, subject, request: toJson(schema, withoutKey) as JsonValue });
}
