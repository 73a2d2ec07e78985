/**
 * Keeps the last lines of a child's output so an error can quote them, while
 * every line still reaches the caller's `onLog` as it arrives.
 */
export class LogTail {
  readonly #lines: string[] = [];
  readonly #capacity: number;
  readonly #forward: ((line: string) => void) | undefined;

  constructor(capacity: number, forward?: (line: string) => void) {
    this.#capacity = capacity;
    this.#forward = forward;
  }

  /** Records one line (without its newline) and forwards it. */
  push(line: string): void {
    this.#lines.push(line);
    if (this.#lines.length > this.#capacity) this.#lines.shift();
    this.#forward?.(line);
  }

  /** The retained lines, oldest first. */
  lines(): string[] {
    return [...this.#lines];
  }

  /** Whether any retained line contains `fragment`. */
  includes(fragment: string): boolean {
    return this.#lines.some((line) => line.includes(fragment));
  }
}
