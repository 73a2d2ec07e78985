import { requireNodeCrypto } from './node-crypto.js';
import type { JsonValue } from './canonical-json.js';

/**
 * Opaque, integrity-protected tokens (page tokens, feed cursors): a JSON
 * body and an HMAC-SHA256 over it, both base64url, joined by a dot. The body
 * is not secret (it is only encoded), so never put secrets in it; the HMAC
 * makes any altered bit, or a token minted with another secret, fail to
 * open. Binding to a subject or a filter is the caller's: put them in the
 * body and compare on open.
 */
export function sealToken(body: { [key: string]: JsonValue }, secret: string): string {
  const encoded = Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
  return `${encoded}.${mac(encoded, secret)}`;
}

/**
 * Opens a token made by {@link sealToken} with the same secret. Returns
 * undefined for anything that is not such a token: wrong shape, bad HMAC,
 * or a body that is not a JSON object.
 */
export function openToken(token: string, secret: string): { [key: string]: JsonValue } | undefined {
  const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match?.[1] || !match[2]) return undefined;
  const expected = Buffer.from(mac(match[1], secret), 'base64url');
  const given = Buffer.from(match[2], 'base64url');
  // base64url has spare bits in its last character: only the canonical
  // spelling of a MAC (and of the body) is accepted, so no bit of a token
  // can change without it failing to open.
  if (given.toString('base64url') !== match[2] || Buffer.from(match[1], 'base64url').toString('base64url') !== match[1]) {
    return undefined;
  }
  if (expected.length !== given.length || !requireNodeCrypto('opening a signed token').timingSafeEqual(expected, given)) return undefined;
  try {
    const body: unknown = JSON.parse(Buffer.from(match[1], 'base64url').toString('utf8'));
    return body !== null && typeof body === 'object' && !Array.isArray(body)
      ? (body as { [key: string]: JsonValue })
      : undefined;
  } catch {
    return undefined;
  }
}

function mac(encoded: string, secret: string): string {
  return requireNodeCrypto('a signed token').createHmac('sha256', secret).update(encoded).digest('base64url');
}
