/** The fewest characters a signing secret may have: 32 base64url characters carry 192 bits. */
export const MIN_SECRET_LENGTH = 32;

/** Words that mark a value copied from an example file rather than generated. */
const PLACEHOLDER = /change|example|placeholder|replace|your[-_ ]?secret/i;

/**
 * Why `secret` cannot sign tokens or cursors, or undefined when it can: it
 * must have at least {@link MIN_SECRET_LENGTH} characters, not be one
 * character repeated, and not look like a placeholder from an example file
 * (`change-me`, `replace-with-...`). Generate one with
 * `openssl rand -base64 32`; `npm start` generates its own.
 */
export function weakSecretReason(secret: string): string | undefined {
  if (secret.length < MIN_SECRET_LENGTH) return `it must have at least ${MIN_SECRET_LENGTH} characters`;
  if (new Set(secret).size < 8) return 'it repeats too few distinct characters';
  if (PLACEHOLDER.test(secret)) return 'it looks like a placeholder from an example, not a generated secret';
  return undefined;
}
