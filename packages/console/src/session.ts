/**
 * The signed-in token, kept in `sessionStorage` only: it lives as long as
 * the tab, is never put in a URL, a cookie or `localStorage`, and is never
 * logged.
 */
const TOKEN_KEY = 'docket.console.token';

/** The token of this tab's session, if signed in. */
export function sessionToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

/** Keeps `token` for this tab. */
export function signIn(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** Forgets the token. */
export function signOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * The subject and role a JWT claims, read from its payload for display
 * only: the services verify the token on every call, the console trusts
 * nothing it reads here.
 */
export function claimsOf(token: string): { subject: string; role: string } | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const json = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { sub?: unknown; role?: unknown };
    return typeof json.sub === 'string' && typeof json.role === 'string' ? { subject: json.sub, role: json.role } : undefined;
  } catch {
    return undefined;
  }
}
