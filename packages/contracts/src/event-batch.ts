import { canonicalJsonByteLength, type JsonValue } from './canonical-json.js';
import { DocketError, invalidField, limitExceeded } from './errors.js';
import { containsNul } from './json-nul.js';
import { LIMITS } from './limits.js';

/** Event types: dotted lowercase names such as `job.admitted` or `worker.step_done`. */
export const EVENT_TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z0-9_-]+)+$/;

/** The longest event type accepted. */
export const EVENT_TYPE_MAX = 128;

/** An event as a writer hands it over, before validation. */
export interface EventDraft {
  readonly type: string;
  readonly payload: { [key: string]: JsonValue } | undefined;
}

/**
 * Checks a batch of events before anything is written (SPEC section 6):
 * 1 to 64 events (an empty batch is INVALID_FIELD, more is LIMIT_EXCEEDED
 * `eventBatch`), each with a well-formed type and a JSON-object payload of
 * at most 64 KiB of canonical JSON (LIMIT_EXCEEDED `eventPayloadBytes`) that
 * Postgres can store (no U+0000). `field` is the batch's field name in the
 * caller's request.
 */
export function validateEventBatch(events: readonly EventDraft[], field = 'events'): void {
  if (events.length === 0) throw invalidField(field, 'must hold at least one event');
  if (events.length > LIMITS.eventBatch) throw limitExceeded('eventBatch', field);
  events.forEach((event, index) => {
    const at = `${field}[${index}]`;
    if (event.type.length > EVENT_TYPE_MAX || !EVENT_TYPE_PATTERN.test(event.type)) {
      throw invalidField(`${at}.type`, 'must be a dotted lowercase name such as worker.step_done, at most 128 characters');
    }
    const payload = event.payload ?? {};
    if (containsNul(payload)) {
      throw new DocketError('INVALID_FIELD', `invalid ${at}.payload`, {
        fieldViolations: [{ field: `${at}.payload`, description: 'must not contain the NUL character' }],
      });
    }
    if (canonicalJsonByteLength(payload) > LIMITS.eventPayloadBytes) throw limitExceeded('eventPayloadBytes', `${at}.payload`);
  });
}
