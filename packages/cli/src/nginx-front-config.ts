import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ServiceName } from './service-names.js';

/**
 * The template of the front's configuration, kept with the other
 * deployment files: `deploy/nginx/docket-front.conf.template` (three
 * levels above `packages/cli/{src,dist}/`).
 */
export const NGINX_FRONT_TEMPLATE = fileURLToPath(new URL('../../../deploy/nginx/docket-front.conf.template', import.meta.url));

/** One service as the front carries it. */
export interface FrontedService {
  readonly name: ServiceName;
  /** `host:port` where nginx takes the service's HTTP/2 calls (gRPC, gRPC-Web and Connect). */
  readonly listen: string;
  /** `host:port` where nginx takes its HTTP/1.1 calls (Connect, gRPC-Web: browsers); none when unset. */
  readonly http1Listen?: string;
  /** `host:port` of every replica, each call going to the next. */
  readonly replicas: readonly string[];
}

/** What the front's configuration is rendered from. */
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
 * log and, per service, its listeners and replicas filled in. Every value
 * is checked first, so nothing but an address or a plain absolute path
 * reaches the configuration: throws an Error naming the first bad one.
 */
export function renderNginxFrontConfig(config: NginxFrontConfig, template: string): string {
  checkPath('the front directory', config.dir);
  checkPath('the access log', config.accessLog);
  if (config.services.length === 0) throw new Error('the front needs at least one service');
  const listeners = new Set<string>();
  const services: TemplateContext[] = config.services.map((service) => {
    if (!/^[a-z]+$/.test(service.name)) throw new Error(`bad service name ${JSON.stringify(service.name)}`);
    if (service.replicas.length === 0) throw new Error(`the front has no replica of ${service.name}`);
    for (const listen of [service.listen, ...(service.http1Listen === undefined ? [] : [service.http1Listen])]) {
      checkAddress(`${service.name}'s listener`, listen);
      if (listeners.has(listen)) throw new Error(`the front listens on ${listen} twice`);
      listeners.add(listen);
    }
    for (const replica of service.replicas) checkAddress(`a replica of ${service.name}`, replica);
    return {
      name: service.name,
      listen: service.listen,
      replicas: service.replicas.map((address) => ({ address })),
      http1: service.http1Listen === undefined ? [] : [{ listen: service.http1Listen }],
    };
  });
  return renderTemplate(template, { dir: config.dir, accessLog: config.accessLog, services });
}

function checkPath(what: string, path: string): void {
  if (!path.startsWith('/') || /[\s;'"{}\\$#]/.test(path)) {
    throw new Error(`${what} must be an absolute path without spaces, quotes, braces, '$', '#' or ';' to appear in nginx's configuration: ${JSON.stringify(path)}`);
  }
}

function checkAddress(what: string, address: string): void {
  const match = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$/.exec(address);
  if (!match || Number(match[1]) < 1 || Number(match[1]) > 65_535) {
    throw new Error(`${what} must be host:port with a port from 1 to 65535, got ${JSON.stringify(address)}`);
  }
}

/** A value the template may name: text, or a list to repeat a section over. */
type TemplateValue = string | readonly TemplateContext[];
interface TemplateContext {
  readonly [key: string]: TemplateValue;
}

const TAG = /\{\{([#/]?)([A-Za-z0-9]+)\}\}/;

/**
 * Mustache's two forms and nothing else: `{{name}}` is the innermost
 * value of that name (a section's item first, then the ones around it),
 * `{{#name}}...{{/name}}` repeats its body per item of a list. A tag alone
 * on its line takes the line with it. A name that is not there, or is a
 * list where text is wanted (or the reverse), is an Error: a template and
 * its renderer that drift apart fail at once.
 */
function renderTemplate(template: string, root: TemplateContext): string {
  const text = template.replace(/^[ \t]*(\{\{[#/][A-Za-z0-9]+\}\})[ \t]*\n/gm, '$1');
  return renderSection(text, [root]);
}

function renderSection(text: string, stack: readonly TemplateContext[]): string {
  let output = '';
  let at = 0;
  const tags = new RegExp(TAG.source, 'g');
  for (let tag = tags.exec(text); tag !== null; tag = tags.exec(text)) {
    const [whole, kind, name = ''] = tag;
    output += text.slice(at, tag.index);
    at = tag.index + whole.length;
    if (kind === '/') throw new Error(`the template closes {{/${name}}}, which is not open`);
    const value = lookUp(stack, name);
    if (kind === '#') {
      const end = closingTag(text, name, at);
      if (typeof value === 'string') throw new Error(`the template repeats {{#${name}}}, which is text`);
      const body = text.slice(at, end);
      for (const item of value) output += renderSection(body, [item, ...stack]);
      at = end + `{{/${name}}}`.length;
      tags.lastIndex = at;
      continue;
    }
    if (typeof value !== 'string') throw new Error(`the template writes {{${name}}}, which is a list`);
    output += value;
  }
  return output + text.slice(at);
}

function lookUp(stack: readonly TemplateContext[], name: string): TemplateValue {
  for (const context of stack) {
    const value = context[name];
    if (value !== undefined) return value;
  }
  throw new Error(`the template names {{${name}}}, which the renderer does not provide`);
}

/** Where the `{{/name}}` closing the section opened just before `from` starts (sections of one name may nest). */
function closingTag(text: string, name: string, from: number): number {
  let depth = 1;
  const tags = new RegExp(`\\{\\{([#/])${name}\\}\\}`, 'g');
  tags.lastIndex = from;
  for (let tag = tags.exec(text); tag !== null; tag = tags.exec(text)) {
    depth += tag[1] === '#' ? 1 : -1;
    if (depth === 0) return tag.index;
  }
  throw new Error(`the template never closes {{#${name}}}`);
}
