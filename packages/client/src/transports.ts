import type { Interceptor, Transport } from '@connectrpc/connect';

/** Default admission address (SPEC §12: admission 7401). */
export const DEFAULT_ADMISSION_URL = 'http://127.0.0.1:7401';
/** Default events address (SPEC §12: events 7403). */
export const DEFAULT_EVENTS_URL = 'http://127.0.0.1:7403';

/**
 * A bearer token, or a function returning the current one (called before
 * every request, so a long-lived client can rotate short-lived tokens).
 */
export type TokenSource = string | (() => string | Promise<string>);

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

/**
 * An interceptor that sends `authorization: Bearer <token>`, for any
 * Connect transport (pass it to connect-web's `createGrpcWebTransport` in
 * a browser). The token is never put anywhere else.
 */
export function bearerAuth(token: TokenSource): Interceptor {
  return (next) => async (request) => {
    const value = typeof token === 'string' ? token : await token();
    request.header.set('authorization', `Bearer ${value}`);
    return next(request);
  };
}
