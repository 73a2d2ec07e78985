import { base32Lower } from './base32.js';

/** The type prefixes of SPEC §2, in the order the SPEC lists them. */
export const ID_PREFIXES = Object.freeze(['job', 'att', 'wkr', 'op', 'del', 'apr', 'eff', 'sch', 'bop'] as const);

/**
 * `job` jobs, `att` attempts, `wkr` worker incarnations, `op` operations,
 * `del` deletions, `apr` approvals, and `eff` effect-journal records (named
 * by the Effect message), `sch` schedules (SPEC section 13) and `bop` bulk
 * operations (section 14); the last three are not in section 2's list,
 * which they extend.
 */
export type IdPrefix = (typeof ID_PREFIXES)[number];

/**
 * The shape of every id (SPEC §2): opaque, 8 to 128 characters, starting
 * with a letter or digit. Ids are never filesystem or SQL names.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{7,127}$/;

/**
 * A fresh id: `<prefix>_` and 128 bits from the CSPRNG in lowercase base32
 * (26 characters). Unguessable and unordered: never sequential, never
 * derived from time, so an id reveals nothing about its neighbours.
 */
export function newId<P extends IdPrefix>(prefix: P): `${P}_${string}` {
  return `${prefix}_${base32Lower(randomBytes16())}`;
}

/** How many ids' randomness one call to the CSPRNG draws. */
const IDS_PER_DRAW = 256;

/** CSPRNG bytes drawn ahead, each 16 handed out once (as Node's `randomUUID` keeps its own). */
let drawn = new Uint8Array(0);
let nextByte = 0;

/**
 * 16 bytes from the CSPRNG, never handed out before. A call to
 * `getRandomValues` costs about as much for 4 KiB as for 16 bytes, so they
 * are drawn 256 ids at a time.
 */
function randomBytes16(): Uint8Array {
  if (nextByte + 16 > drawn.length) {
    drawn = globalThis.crypto.getRandomValues(new Uint8Array(16 * IDS_PER_DRAW));
    nextByte = 0;
  }
  nextByte += 16;
  return drawn.subarray(nextByte - 16, nextByte);
}

/** Whether `value` is a string of the id shape. Never throws. */
export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/** Whether `value` has the id shape and the given type prefix. Never throws. */
export function isIdOf<P extends IdPrefix>(prefix: P, value: unknown): value is `${P}_${string}` {
  return isValidId(value) && value.startsWith(`${prefix}_`);
}
