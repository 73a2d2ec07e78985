const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * RFC 4648 base32 in lowercase without padding: case-insensitive-safe,
 * URL-safe and free of `_`, so an id's prefix separator stays unambiguous.
 * Internal.
 */
export function base32Lower(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET.charAt((buffer >>> bits) & 31);
    }
  }
  if (bits > 0) out += ALPHABET.charAt((buffer << (5 - bits)) & 31);
  return out;
}
