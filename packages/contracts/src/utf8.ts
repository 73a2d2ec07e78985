/** How many bytes `text` takes as UTF-8 (lone surrogates count as U+FFFD, three bytes), without encoding it. Internal. */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

const encoder = new TextEncoder();

/** Below this many UTF-16 units, copying ASCII unit by unit beats a call into `TextEncoder.encodeInto` (measured on Node 20). */
const SHORT_TEXT = 32;

/**
 * Writes `text` as UTF-8 into `target` from `at`, which must have room for
 * three bytes per UTF-16 unit; returns the number of bytes written. Short
 * ASCII is copied directly, the rest encoded by `TextEncoder` (lone
 * surrogates as U+FFFD, as everywhere else). Internal.
 */
export function writeUtf8(text: string, target: Uint8Array, at: number): number {
  if (text.length >= SHORT_TEXT) return encoder.encodeInto(text, target.subarray(at)).written;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0x80) return i + encoder.encodeInto(text.slice(i), target.subarray(at + i)).written;
    target[at + i] = unit;
  }
  return text.length;
}
