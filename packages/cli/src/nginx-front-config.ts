import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { checkAddress, checkPath, renderTemplate, type TemplateContext } from './deployment-template.js';
import type { ServiceName } from './service-names.js';

/**
 * The template of the front's nginx configuration, kept with the other
 * deployment files: `deploy/nginx/docket-front.conf.template` (three
 * levels above `packages/cli/{src,dist}/`).
 */
export const NGINX_FRONT_TEMPLATE = fileURLToPath(new URL('../../../deploy/nginx/docket-front.conf.template', import.meta.url));

/** One service as the front carries it. */
export interface FrontedService {
  readonly name: ServiceName;
  /**
   * `host:port` clients call: the port switch's, which passes a connection
   * that opens with HTTP/2's preface to `http2Listen` and any other to
   * `http1Listen` (port-switch-config.ts).
   */
  readonly listen: string;
  /** `host:port` where nginx takes the service's HTTP/2 calls (gRPC, gRPC-Web and Connect); the services' own calls to state come here directly. */
  readonly http2Listen: string;
  /** `host:port` where nginx takes its HTTP/1.1 calls (Connect, gRPC-Web: browsers, curl). */
  readonly http1Listen: string;
  /** `host:port` of every replica, each call going to the next. */
  readonly replicas: readonly string[];
}

/** What the front's nginx configuration is rendered from. */
export interface NginxFrontConfig {
  /** The front's own directory (`<data dir>/nginx`): its pid file and temporary files. */
  readonly dir: string;
  /** The access log: one line per call, naming the replica that answered it. */
  readonly accessLog: string;
  readonly services: readonly FrontedService[];
}

/** The template as shipped ({@link NGINX_FRONT_TEMPLATE}). */
export function loadNginxFrontTemplate(): Promise<string> {
  return readFile(NGINX_FRONT_TEMPLATE, 'utf8');
}

/**
 * The nginx configuration of the front: `template` (normally
 * {@link loadNginxFrontTemplate}) with the front's directory, its access
 * log and, per service, nginx's two listeners and the replicas filled in.
 * Every value is checked first, so nothing but an address or a plain
 * absolute path reaches the configuration: throws an Error naming the
 * first bad one.
 */
export function renderNginxFrontConfig(config: NginxFrontConfig, template: string): string {
  checkPath('the front directory', config.dir);
  checkPath('the access log', config.accessLog);
  const services: TemplateContext[] = checkFrontedServices(config.services).map((service) => ({
    name: service.name,
    http2Listen: service.http2Listen,
    http1Listen: service.http1Listen,
    replicas: service.replicas.map((address) => ({ address })),
  }));
  return renderTemplate(template, { dir: config.dir, accessLog: config.accessLog, services });
}

/**
 * `services` once each is checked: a plain name, at least one replica,
 * every address `host:port`, and no address listened on twice. Throws an
 * Error naming the first bad one.
 */
export function checkFrontedServices(services: readonly FrontedService[]): readonly FrontedService[] {
  if (services.length === 0) throw new Error('the front needs at least one service');
  const listeners = new Set<string>();
  for (const service of services) {
    if (!/^[a-z]+$/.test(service.name)) throw new Error(`bad service name ${JSON.stringify(service.name)}`);
    if (service.replicas.length === 0) throw new Error(`the front has no replica of ${service.name}`);
    for (const listen of [service.listen, service.http2Listen, service.http1Listen]) {
      checkAddress(`${service.name}'s listener`, listen);
      if (listeners.has(listen)) throw new Error(`the front listens on ${listen} twice`);
      listeners.add(listen);
    }
    for (const replica of service.replicas) checkAddress(`a replica of ${service.name}`, replica);
  }
  return services;
}
