/**
 * Protobuf base-128 varints of non-negative safe integers (lengths, tags,
 * sequences below 2^53), for the code that writes protobuf bytes by hand:
 * the state service's event encoder and the events service's page frames.
 * Internal.
 */

/** How many bytes {@link writeVarint} writes for `value`. */
export function varintLength(value: number): number {
  let length = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    length += 1;
  }
  return length;
}

/** Writes `value` into `out` at `at`; returns where it ends. */
export function writeVarint(out: Uint8Array, at: number, value: number): number {
  while (value >= 0x80) {
    out[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at++] = value;
  return at;
}
