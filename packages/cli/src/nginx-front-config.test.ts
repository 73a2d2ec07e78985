import { beforeAll, describe, expect, it } from 'vitest';
import { loadNginxFrontTemplate, renderNginxFrontConfig, type FrontedService, type NginxFrontConfig } from './nginx-front-config.js';

const SERVICES: readonly FrontedService[] = [
  { name: 'state', listen: '127.0.0.1:7404', http2Listen: '127.0.0.1:41204', http1Listen: '127.0.0.1:41104', replicas: ['127.0.0.1:41001', '127.0.0.1:41002'] },
  { name: 'admission', listen: '127.0.0.1:7401', http2Listen: '127.0.0.1:41201', http1Listen: '127.0.0.1:41101', replicas: ['127.0.0.1:41011', '127.0.0.1:41012', '127.0.0.1:41013'] },
  { name: 'execution', listen: '127.0.0.1:7402', http2Listen: '127.0.0.1:41202', http1Listen: '127.0.0.1:41102', replicas: ['127.0.0.1:41021', '127.0.0.1:41022', '127.0.0.1:41023'] },
  { name: 'events', listen: '127.0.0.1:7403', http2Listen: '127.0.0.1:41203', http1Listen: '127.0.0.1:41103', replicas: ['127.0.0.1:41031', '127.0.0.1:41032'] },
];

const CONFIG: NginxFrontConfig = { dir: '/home/dev/.docket/nginx', accessLog: '/home/dev/.docket/logs/nginx-access.log', services: SERVICES };

let template: string;
beforeAll(async () => {
  template = await loadNginxFrontTemplate();
});

/** The body of the block that starts with `opening` (up to its matching brace). */
function block(config: string, opening: string): string {
  const start = config.indexOf(`${opening} {`);
  if (start < 0) throw new Error(`no block ${opening}`);
  let depth = 0;
  for (let index = config.indexOf('{', start); index < config.length; index += 1) {
    if (config[index] === '{') depth += 1;
    if (config[index] === '}' && --depth === 0) return config.slice(start, index + 1);
  }
  throw new Error(`block ${opening} is not closed`);
}

describe('renderNginxFrontConfig', () => {
  it('puts every replica of a service in its upstream, round-robin with kept-alive connections', () => {
    const config = renderNginxFrontConfig(CONFIG, template);
    for (const service of SERVICES) {
      const upstream = block(config, `upstream docket_${service.name}`);
      expect(upstream.match(/^\s*server \S+;$/gm)).toEqual(service.replicas.map((address) => `    server ${address};`));
      expect(upstream).toMatch(/^\s*keepalive \d+;$/m);
      // Round-robin is nginx's default: no other balancing method is named.
      expect(upstream).not.toMatch(/least_conn|ip_hash|hash |random/);
    }
  });

  it("listens on each service's HTTP/2 listener (never on the port switch's) and passes calls to its replicas over gRPC", () => {
    const config = renderNginxFrontConfig(CONFIG, template);
    for (const service of SERVICES) {
      expect(config).not.toContain(service.listen);
      const servers = config.split(/\n(?=  server \{)/).filter((part) => part.includes(`listen ${service.http2Listen} http2;`));
      expect(servers).toHaveLength(1);
      expect(block(servers[0]!, '  server')).toContain(`grpc_pass grpc://docket_${service.name};`);
    }
    expect(config).toMatch(/^\s*grpc_read_timeout 1d;$/m);
    expect(config).toMatch(/^\s*grpc_send_timeout 1d;$/m);
    expect(config).toMatch(/^\s*client_body_timeout 1d;$/m);
    expect(config).toMatch(/^\s*client_max_body_size 0;$/m);
  });

  it('gives every service an HTTP/1.1 listener, proxied over HTTP/1.1 to an upstream of its replicas', () => {
    const config = renderNginxFrontConfig(CONFIG, template);
    expect(config.match(/^\s*listen [^ ;]+;$/gm)).toEqual(SERVICES.map((service) => `    listen ${service.http1Listen};`));
    for (const service of SERVICES) {
      const upstream = block(config, `upstream docket_${service.name}_http1`);
      expect(upstream.match(/server \S+;/g)).toEqual(service.replicas.map((address) => `server ${address};`));
      expect(config).toContain(`proxy_pass http://docket_${service.name}_http1;`);
    }
    expect(config).toMatch(/^\s*proxy_buffering off;$/m);
  });

  it('runs in the foreground as one process and keeps every file it writes under its own directory', () => {
    const config = renderNginxFrontConfig(CONFIG, template);
    expect(config).toMatch(/^daemon off;$/m);
    expect(config).toMatch(/^master_process off;$/m);
    expect(config).toMatch(/^error_log stderr \w+;$/m);
    expect(config).toContain(`access_log ${CONFIG.accessLog} docket;`);
    expect(config).not.toMatch(/^\s*user /m);
    const paths = [...config.matchAll(/^\s*(?:pid|\w+_temp_path) (\S+);$/gm)].map((match) => match[1]);
    expect(paths).toHaveLength(6);
    for (const path of paths) expect(path?.startsWith(`${CONFIG.dir}/`)).toBe(true);
    expect(config).not.toContain('{{');
  });

  it.each([
    ['a relative directory', { ...CONFIG, dir: 'nginx' }, /absolute path/],
    ['a directory with a space', { ...CONFIG, dir: '/tmp/my front' }, /absolute path/],
    ['an access log with a semicolon', { ...CONFIG, accessLog: '/tmp/a;b' }, /absolute path/],
    ['a listener that smuggles a directive', { ...CONFIG, services: [{ ...SERVICES[0]!, listen: '127.0.0.1:80; include /etc/passwd' }] }, /host:port/],
    ['a replica without a port', { ...CONFIG, services: [{ ...SERVICES[0]!, replicas: ['127.0.0.1'] }] }, /host:port/],
    ['port 0', { ...CONFIG, services: [{ ...SERVICES[0]!, listen: '127.0.0.1:0' }] }, /host:port/],
    ['a service without replicas', { ...CONFIG, services: [{ ...SERVICES[0]!, replicas: [] }] }, /no replica of state/],
    ['one listener twice', { ...CONFIG, services: [SERVICES[1]!, { ...SERVICES[2]!, listen: SERVICES[1]!.listen }] }, /twice/],
    ["nginx's listener on the switch's port", { ...CONFIG, services: [{ ...SERVICES[1]!, http1Listen: SERVICES[1]!.listen }] }, /twice/],
    ['no service', { ...CONFIG, services: [] }, /at least one service/],
  ])('refuses %s', (_what, config, message) => {
    expect(() => renderNginxFrontConfig(config, template)).toThrow(message);
  });

  it('fails on a template that names what the renderer does not provide, or leaves a section open', () => {
    expect(() => renderNginxFrontConfig(CONFIG, 'pid {{pidFile}};')).toThrow(/\{\{pidFile\}\}/);
    expect(() => renderNginxFrontConfig(CONFIG, '{{#services}} {{name}}')).toThrow(/never closes/);
    expect(() => renderNginxFrontConfig(CONFIG, '{{/services}}')).toThrow(/not open/);
    expect(() => renderNginxFrontConfig(CONFIG, '{{services}}')).toThrow(/is a list/);
    expect(() => renderNginxFrontConfig(CONFIG, '{{#dir}}{{/dir}}')).toThrow(/is text/);
    expect(renderNginxFrontConfig(CONFIG, '{{#services}}\n{{name}}{{#replicas}} {{address}}{{/replicas}}\n{{/services}}\n')).toBe(
      SERVICES.map((service) => `${service.name} ${service.replicas.join(' ')}\n`).join(''),
    );
  });
});
