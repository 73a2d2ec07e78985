import type { JsonValue } from './canonical-json.js';

/**
 * Whether a JSON value holds U+0000 in any string or key. Postgres jsonb
 * cannot store it, so every JSON field that is stored refuses it up front
 * (an escaped backslash followed by `u0000` is ordinary text and passes).
 */
export function containsNul(value: JsonValue): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(containsNul);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([key, item]) => key.includes('\u0000') || containsNul(item));
  }
  return false;
}
