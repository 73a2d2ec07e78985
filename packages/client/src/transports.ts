import type { Transport } from '@connectrpc/connect';
import type { TokenSource } from '@docket/client-kit';

export { bearerAuth, type TokenSource } from '@docket/client-kit';

/** Default admission address (SPEC §12: admission 7401). */
export const DEFAULT_ADMISSION_URL = 'http://127.0.0.1:7401';
/** Default events address (SPEC §12: events 7403). */
export const DEFAULT_EVENTS_URL = 'http://127.0.0.1:7403';

/** The two transports a {@link DocketClient} uses. */
export interface DocketTransports {
  /** To `docket.admission.v1.AdmissionService`. */
  readonly admission: Transport;
  /** To `docket.events.v1.EventService`. */
  readonly events: Transport;
}

/** Where the services are and who calls them. */
export interface NodeTransportOptions {
  /**
   * A base address (`http://host` or `https://host`) whose port, when it
   * has none, is filled in per service: admission at 7401, events at 7403.
   * Default `http://127.0.0.1`.
   */
  readonly url?: string;
  /** The admission service's full address; overrides `url`. */
  readonly admissionUrl?: string;
  /** The events service's full address; overrides `url`. */
  readonly eventsUrl?: string;
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token: TokenSource;
}

