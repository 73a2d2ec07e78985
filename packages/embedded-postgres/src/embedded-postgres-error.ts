/**
 * Raised when the embedded cluster cannot be initialised, started or
 * reached. The message ends with the tail of Postgres' own log, because the
 * underlying failure (a bad setting, a port in use, a data directory owned by
 * someone else) is only ever explained there.
 */
export class EmbeddedPostgresError extends Error {
  override readonly name = 'EmbeddedPostgresError';

  /** The last lines Postgres (or initdb) wrote before the failure. */
  readonly logTail: readonly string[];

  constructor(summary: string, logTail: readonly string[] = [], options?: { cause?: unknown }) {
    const detail =
      logTail.length === 0 ? '' : `\n--- last Postgres log lines ---\n${logTail.join('\n')}`;
    super(`${summary}${detail}`, options);
    this.logTail = logTail;
  }
}
