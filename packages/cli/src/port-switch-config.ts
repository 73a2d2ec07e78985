import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderTemplate } from './deployment-template.js';
import { checkFrontedServices, type FrontedService } from './nginx-front-config.js';

/**
 * The template of the port switch's HAProxy configuration:
 * `deploy/haproxy/docket-port-switch.cfg.template` (three levels above
 * `packages/cli/{src,dist}/`).
 */
export const PORT_SWITCH_TEMPLATE = fileURLToPath(new URL('../../../deploy/haproxy/docket-port-switch.cfg.template', import.meta.url));

/** The template as shipped ({@link PORT_SWITCH_TEMPLATE}). */
export function loadPortSwitchTemplate(): Promise<string> {
  return readFile(PORT_SWITCH_TEMPLATE, 'utf8');
}

/**
 * The HAProxy configuration of the port switch: `template` (normally
 * {@link loadPortSwitchTemplate}) with, per service, the port clients
 * call and the two nginx listeners it passes connections to. The services
 * are checked as the nginx configuration checks them; throws an Error
 * naming the first bad value.
 */
export function renderPortSwitchConfig(services: readonly FrontedService[], template: string): string {
  const checked = checkFrontedServices(services).map((service) => ({
    name: service.name,
    listen: service.listen,
    http2Listen: service.http2Listen,
    http1Listen: service.http1Listen,
  }));
  return renderTemplate(template, { services: checked });
}
