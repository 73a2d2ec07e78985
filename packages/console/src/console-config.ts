/** Where the console finds the services. */
export interface ConsoleConfig {
  /** The admission service's base URL (Connect-Web over HTTP/1.1 or HTTP/2). */
  readonly admissionUrl: string;
  /** The events service's base URL. */
  readonly eventsUrl: string;
}

/** The SPEC's default ports on this machine, for a console served without `config.json`. */
const FALLBACK: ConsoleConfig = { admissionUrl: 'http://127.0.0.1:7401', eventsUrl: 'http://127.0.0.1:7403' };

/**
 * Reads `config.json` next to the page (written by whoever serves the
 * console: `docket dev` names the services it started; behind Envoy both
 * are the page's own origin). Without one, the SPEC's default ports.
 */
export async function loadConsoleConfig(): Promise<ConsoleConfig> {
  try {
    const response = await fetch('./config.json', { cache: 'no-store' });
    if (!response.ok) return FALLBACK;
    const json = (await response.json()) as Partial<Record<keyof ConsoleConfig, unknown>>;
    const pick = (value: unknown, fallback: string): string =>
      typeof value === 'string' && value !== '' ? new URL(value, location.href).href.replace(/\/$/, '') : fallback;
    return { admissionUrl: pick(json.admissionUrl, FALLBACK.admissionUrl), eventsUrl: pick(json.eventsUrl, FALLBACK.eventsUrl) };
  } catch {
    return FALLBACK;
  }
}
