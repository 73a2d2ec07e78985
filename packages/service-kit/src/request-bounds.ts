import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { DocketError, LIMITS, limitExceeded, type FieldViolation, type LimitName } from '@docket/contracts';
import { connectErrorOfDocketError, errorInfoOf } from './error-mapping.js';

/** `String.prototype.isWellFormed` (ES2024; Node 20 has it, the ES2023 typings do not). */
type MaybeWellFormed = string & { isWellFormed(): boolean };

/** Earliest second a Timestamp may carry: 0001-01-01T00:00:00Z (the proto's own range). */
const TIMESTAMP_MIN_SECONDS = -62_135_596_800n;
/** Latest second a Timestamp may carry: 9999-12-31T23:59:59Z. */
const TIMESTAMP_MAX_SECONDS = 253_402_300_799n;
/** Largest magnitude of a Duration's seconds: 10,000 years (the proto's own range). */
const DURATION_MAX_SECONDS = 315_576_000_000n;
const NANOS_MAX = 999_999_999;
/** A refusal lists at most this many violations; the first ones are what a caller fixes first. */
const MAX_VIOLATIONS = 16;

const STRUCT = 'google.protobuf.Struct';
const VALUE = 'google.protobuf.Value';
const LIST_VALUE = 'google.protobuf.ListValue';
const TIMESTAMP = 'google.protobuf.Timestamp';
const DURATION = 'google.protobuf.Duration';

/**
 * The field violations of a decoded request message against the limits
 * every Docket RPC shares, whatever the field means (SPEC section 9):
 *
 * - every string (fields, list items, map keys and values, Struct keys and
 *   strings) holds no U+0000 and no lone surrogate; a string field outside
 *   a Struct is at most {@link LIMITS}.stringFieldBytes UTF-8 bytes;
 * - every `double`/`float` field and every Struct number is finite (no NaN
 *   or Infinity, which JSON and jsonb cannot hold);
 * - a Struct, Value or ListValue nests at most {@link LIMITS}.structDepth
 *   levels;
 * - a Timestamp lies within 0001-01-01 and 9999-12-31 with nanos in
 *   [0, 999999999]; a Duration is within +-10,000 years with nanos in
 *   [-999999999, 999999999] and the same sign as its seconds.
 *
 * Field paths use the proto names (`filter.queue`, `retry_policy.max_backoff`,
 * `events[2].payload`); descriptions state the rule and never echo a value
 * or a Struct key. Field-specific rules (queue names, id shapes, canonical
 * JSON sizes) stay with the handlers; this check only guarantees that no
 * handler meets a value it cannot store or compute with.
 */
export function requestBoundViolations(schema: DescMessage, message: object): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const violate = (field: string, description: string, reason?: string): void => {
    if (violations.length < MAX_VIOLATIONS) violations.push({ field, description, ...(reason ? { reason } : {}) });
  };
  checkMessage(schema, message as Record<string, unknown>, '', violate);
  return violations;
}

/**
 * Throws `INVALID_ARGUMENT` / `INVALID_FIELD` with the
 * {@link requestBoundViolations} of `message` as `google.rpc.BadRequest`,
 * or returns when there are none.
 */
export function assertRequestWithinBounds(schema: DescMessage, message: object): void {
  const violations = requestBoundViolations(schema, message);
  if (violations.length > 0) {
    throw new DocketError('INVALID_FIELD', 'the request holds a value no Docket field accepts', { fieldViolations: violations });
  }
}

type Violate = (field: string, description: string, reason?: string) => void;

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

function checkMessage(schema: DescMessage, message: Record<string, unknown>, path: string, violate: Violate): void {
  for (const member of schema.members) {
    if (member.kind === 'oneof') {
      const selected = message[member.localName] as { case?: string; value?: unknown } | undefined;
      if (selected?.case === undefined) continue;
      const field = member.fields.find((f) => f.localName === selected.case);
      if (field) checkField(field, selected.value, join(path, field.name), violate);
      continue;
    }
    checkField(member, message[member.localName], join(path, member.name), violate);
  }
}

function checkField(field: DescField, value: unknown, path: string, violate: Violate): void {
  if (value === undefined || value === null) return;
  switch (field.fieldKind) {
    case 'scalar':
      checkScalar(field.scalar, value, path, violate);
      return;
    case 'enum':
      return;
    case 'message':
      checkMessageValue(field.message, value, path, violate);
      return;
    case 'list':
      (value as unknown[]).forEach((item, index) => {
        const itemPath = `${path}[${index}]`;
        if (field.listKind === 'scalar') checkScalar(field.scalar, item, itemPath, violate);
        else if (field.listKind === 'message') checkMessageValue(field.message, item, itemPath, violate);
      });
      return;
    case 'map':
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        checkText(key, path, violate);
        if (field.mapKind === 'scalar') checkScalar(field.scalar, item, path, violate);
        else if (field.mapKind === 'message') checkMessageValue(field.message, item, path, violate);
      }
      return;
  }
}

function checkScalar(scalar: ScalarType, value: unknown, path: string, violate: Violate): void {
  if (scalar === ScalarType.STRING && typeof value === 'string') {
    checkText(value, path, violate);
    if (Buffer.byteLength(value, 'utf8') > LIMITS.stringFieldBytes) {
      const limit: LimitName = 'stringFieldBytes';
      violate(path, `exceeds the ${limit} limit of ${LIMITS[limit]}`, 'LIMIT_EXCEEDED');
    }
  } else if ((scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT) && typeof value === 'number' && !Number.isFinite(value)) {
    violate(path, 'must be a finite number');
  }
}

/** NUL and lone surrogates: text that UTF-8, Postgres text and jsonb cannot carry faithfully. */
function checkText(text: string, path: string, violate: Violate): boolean {
  if (text.includes('\u0000')) {
    violate(path, 'must not contain the NUL character');
    return false;
  }
  if (!(text as MaybeWellFormed).isWellFormed()) {
    violate(path, 'must be valid UTF-8 (no lone surrogates)');
    return false;
  }
  return true;
}

function checkMessageValue(schema: DescMessage, value: unknown, path: string, violate: Violate): void {
  switch (schema.typeName) {
    case STRUCT:
    case VALUE:
    case LIST_VALUE:
      // protobuf-es represents these as plain JSON values.
      checkJson(value, path, 1, violate);
      return;
    case TIMESTAMP:
      checkTimestamp(value as { seconds: bigint; nanos: number }, path, violate);
      return;
    case DURATION:
      checkDuration(value as { seconds: bigint; nanos: number }, path, violate);
      return;
  }
  if (typeof value === 'string') {
    // google.protobuf.StringValue and friends are unboxed.
    checkScalar(ScalarType.STRING, value, path, violate);
    return;
  }
  if (typeof value === 'number') {
    checkScalar(ScalarType.DOUBLE, value, path, violate);
    return;
  }
  if (typeof value === 'object') checkMessage(schema, value as Record<string, unknown>, path, violate);
}

/** @returns false once the value broke a rule, so one bad Struct reports once. */
function checkJson(value: unknown, path: string, depth: number, violate: Violate): boolean {
  if (typeof value === 'string') return checkText(value, path, violate);
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return true;
    violate(path, 'must hold only finite numbers (no NaN or Infinity)');
    return false;
  }
  if (value === null || typeof value !== 'object') return true;
  if (depth > LIMITS.structDepth) {
    violate(path, `exceeds the structDepth limit of ${LIMITS.structDepth}`, 'LIMIT_EXCEEDED');
    return false;
  }
  if (Array.isArray(value)) return value.every((item) => checkJson(item, path, depth + 1, violate));
  return Object.entries(value).every(([key, item]) => checkText(key, path, violate) && checkJson(item, path, depth + 1, violate));
}

function checkTimestamp(value: { seconds: bigint; nanos: number }, path: string, violate: Violate): void {
  if (value.seconds < TIMESTAMP_MIN_SECONDS || value.seconds > TIMESTAMP_MAX_SECONDS) {
    violate(path, 'must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z');
  } else if (!Number.isInteger(value.nanos) || value.nanos < 0 || value.nanos > NANOS_MAX) {
    violate(path, 'nanos must be between 0 and 999999999');
  }
}

function checkDuration(value: { seconds: bigint; nanos: number }, path: string, violate: Violate): void {
  if (value.seconds < -DURATION_MAX_SECONDS || value.seconds > DURATION_MAX_SECONDS) {
    violate(path, 'must be within 10,000 years either way');
  } else if (!Number.isInteger(value.nanos) || value.nanos < -NANOS_MAX || value.nanos > NANOS_MAX) {
    violate(path, 'nanos must be between -999999999 and 999999999');
  } else if ((value.seconds > 0n && value.nanos < 0) || (value.seconds < 0n && value.nanos > 0)) {
    violate(path, 'seconds and nanos must have the same sign');
  }
}

/**
 * What a caller gets when its request could not be read: Connect's own
 * failures while reading, decompressing and decoding a request message
 * (raised before any handler, without Docket details) become
 * `INVALID_ARGUMENT`. A message over the service's size limit, compressed
 * or decompressed, is `LIMIT_EXCEEDED` with `{limit, max}`; a body that is
 * not a valid protobuf or JSON encoding of the request (including invalid
 * UTF-8 in a string, an unparsable timeout header, and a gRPC body with no
 * complete message or more than one for a unary method) is `INVALID_FIELD`.
 * An unsupported compression stays UNIMPLEMENTED. Anything else, and any
 * error that already carries Docket details, is returned unchanged for
 * `toConnectError` to judge. Connect's message is never passed on: it
 * can quote the body.
 */
export function requestDecodeFailure(error: ConnectError, requestBytes: LimitName): ConnectError {
  if (errorInfoOf(error) !== undefined) return error;
  switch (error.code) {
    case Code.ResourceExhausted:
      return connectErrorOfDocketError(limitExceeded(requestBytes));
    case Code.Internal:
    case Code.InvalidArgument:
      return connectErrorOfDocketError(new DocketError('INVALID_FIELD', 'the request message could not be decoded'));
    case Code.Unimplemented:
      // Connect's "protocol error: missing input message" (a gRPC frame cut
      // short, so no message arrived) and "received extra input message"
      // are bodies that are not the request, not an unsupported feature.
      return error.rawMessage.startsWith('protocol error: ')
        ? connectErrorOfDocketError(new DocketError('INVALID_FIELD', 'the request message could not be decoded'))
        : error;
    default:
      return error;
  }
}

/**
 * Marks a request as having reached the interceptor chain, which for a
 * unary RPC means its message was read and decoded. The server's adapter
 * reads the mark to tell Connect's own decode failures (no mark) from
 * handler failures, which the error-mapping interceptor already mapped.
 */
export interface ChainReached {
  reached: boolean;
}

/**
 * Whether a request is a batch of items that succeed or fail one by one
 * (SubmitJobs): its only field is a repeated message named `items`. Its
 * handler checks each item with {@link assertRequestWithinBounds} and
 * answers a bad item alone, with field paths relative to the item, so the
 * interceptor leaves the batch to it.
 */
export function isItemBatch(schema: DescMessage): boolean {
  const [only, ...others] = schema.fields;
  return others.length === 0 && only?.name === 'items' && only.fieldKind === 'list' && only.listKind === 'message';
}

/**
 * Checks every request message against {@link requestBoundViolations}
 * before the handler runs, so nothing out of bounds reaches a write (an
 * {@link isItemBatch} request is checked item by item by its handler). For
 * streaming requests the input is checked as the handler reads it, and a
 * failure to read or decode it (which for streams Connect raises inside the
 * chain) becomes {@link requestDecodeFailure}.
 */
export function requestBoundsInterceptor(requestBytes: LimitName): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      if (!isItemBatch(req.method.input)) assertRequestWithinBounds(req.method.input, req.message);
      return next(req);
    }
    const input = req.message;
    const schema = req.method.input;
    async function* checked(): AsyncIterable<never> {
      const iterator = input[Symbol.asyncIterator]();
      for (;;) {
        let step: IteratorResult<unknown>;
        try {
          step = await iterator.next();
        } catch (error) {
          throw error instanceof ConnectError ? requestDecodeFailure(error, requestBytes) : error;
        }
        if (step.done) return;
        assertRequestWithinBounds(schema, step.value as object);
        yield step.value as never;
      }
    }
    return next({ ...req, message: checked() });
  };
}

