/** `String.prototype.isWellFormed` (ES2024; Node 20 has it, the ES2023 typings do not). */
type MaybeWellFormed = string & { isWellFormed(): boolean };

/**
 * Throws a TypeError when `text` holds a lone UTF-16 surrogate, which has no
 * UTF-8 encoding: encoders would silently substitute U+FFFD, so two
 * different strings would hash alike. Internal.
 */
export function assertWellFormed(text: string, what: string): void {
  if (!(text as MaybeWellFormed).isWellFormed()) throw new TypeError(`${what} contains a lone surrogate`);
}
