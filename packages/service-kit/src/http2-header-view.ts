import type * as http2 from 'node:http2';

/**
 * A `Headers` over the header object Node's HTTP/2 core hands a stream,
 * read in place: interceptors ask for two or three names per call, and
 * building a WHATWG `Headers` (undici validates and copies every entry)
 * cost more than the rest of reading the request. Pseudo-headers are not
 * part of it. Writes go to an overlay of their own, so the stream's
 * object is never changed.
 */
export function http2HeaderView(raw: http2.IncomingHttpHeaders): Headers {
  return new Http2HeaderView(raw) as unknown as Headers;
}

class Http2HeaderView {
  readonly #raw: http2.IncomingHttpHeaders;
  /** Names set or deleted through this view: a value, or null for deleted. */
  #overlay: Map<string, string | null> | undefined;

  constructor(raw: http2.IncomingHttpHeaders) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    const set = this.#overlay?.get(key);
    if (set !== undefined) return set;
    if (key.startsWith(':')) return null;
    const value = this.#raw[key];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  set(name: string, value: string): void {
    (this.#overlay ??= new Map()).set(name.toLowerCase(), String(value));
  }

  append(name: string, value: string): void {
    const current = this.get(name);
    this.set(name, current === null ? value : `${current}, ${value}`);
  }

  delete(name: string): void {
    (this.#overlay ??= new Map()).set(name.toLowerCase(), null);
  }

  getSetCookie(): string[] {
    const value = this.get('set-cookie');
    return value === null ? [] : [value];
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this as unknown as Headers);
  }

  *entries(): IterableIterator<[string, string]> {
    const names = new Set<string>();
    for (const key of Object.keys(this.#raw)) if (!key.startsWith(':')) names.add(key);
    for (const key of this.#overlay?.keys() ?? []) names.add(key);
    for (const key of [...names].sort()) {
      const value = this.get(key);
      if (value !== null) yield [key, value];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}
