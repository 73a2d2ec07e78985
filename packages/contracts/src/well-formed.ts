const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Throws a TypeError when `text` holds a lone UTF-16 surrogate, which has no
 * UTF-8 encoding: encoders would silently substitute U+FFFD, so two
 * different strings would hash alike. Internal.
 */
export function assertWellFormed(text: string, what: string): void {
  if (LONE_SURROGATE.test(text)) throw new TypeError(`${what} contains a lone surrogate`);
}
