import { toJson, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { computeRequestDigest, type JsonValue, type KnownCanonicalJson, type RequestDigest } from '@docket/contracts';

/** The proto3 JSON name of `idempotency_key`, the one field the digest leaves out. */
const IDEMPOTENCY_KEY_JSON_NAME = 'idempotencyKey';

/**
 * The request digest of SPEC section 2, computed from the authenticated
 * request: sha256(JCS({"operation", "subject", "request"})) where request is
 * the proto3 JSON (default options) of the message with idempotency_key
 * cleared. Any client can recompute it (docs/idempotency.md shows how).
 *
 * The request is never copied deeply. Proto3 JSON omits a string at its
 * default, so the JSON of the message with the key cleared is the JSON of
 * the message without its `idempotencyKey` member. A singular
 * `google.protobuf.Struct` field (SubmitJob's `input`) is held by
 * protobuf-es as the very JSON object proto3 JSON writes for it, so it is
 * taken as it is instead of being converted to a Struct and back; and when
 * `known` has its canonical text (`validateJobSpecMessage` computed it as
 * `canonicalInput`), that text goes into the digest without serialising
 * the input again:
 *
 * ```ts
 * fingerprintRequest(SubmitJobRequestSchema, request, operation, subject, new Map([[spec.input, spec.canonicalInput]]));
 * ```
 */
export function fingerprintRequest<Desc extends DescMessage>(
  schema: Desc,
  request: MessageShape<Desc> & { idempotencyKey: string },
  operation: string,
  subject: string,
  known?: KnownCanonicalJson,
): RequestDigest {
  const structs = structFieldsOf(schema);
  const fields = request as unknown as Record<string, JsonValue | undefined>;
  let written = request;
  if (structs.length > 0) {
    const withoutStructs: Record<string, unknown> = { ...request };
    for (const field of structs) withoutStructs[field.localName] = undefined;
    written = withoutStructs as typeof request;
  }
  const json = toJson(schema, written) as { [member: string]: JsonValue };
  delete json[IDEMPOTENCY_KEY_JSON_NAME];
  for (const field of structs) {
    const value = fields[field.localName];
    if (value !== undefined) json[field.jsonName] = value;
  }
  return computeRequestDigest({ operation, subject, request: json }, known);
}

/** The singular, non-oneof `google.protobuf.Struct` fields of a message. */
function structFieldsOf(schema: DescMessage): DescField[] {
  return schema.fields.filter(
    (field) => field.fieldKind === 'message' && field.message.typeName === 'google.protobuf.Struct' && field.oneof === undefined,
  );
}
