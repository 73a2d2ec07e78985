import type * as http2 from 'node:http2';

/**
 * A WHATWG `Headers` of a header object received over `node:http2` (a
 * response's headers or trailers), pseudo-headers left out and every value
 * of a repeated field kept, so Connect's protocol helpers
 * (`findTrailerError`, `trailerParse`) can read it as they read a fetch
 * response's.
 */
export function receivedHeaders(received: http2.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(received)) {
    if (key.startsWith(':') || value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(key, item);
  }
  return headers;
}
