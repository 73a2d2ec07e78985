import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { locateFrontPrograms } from './front-programs.js';
import type { FrontedService } from './nginx-front-config.js';
import { loadPortSwitchTemplate, renderPortSwitchConfig } from './port-switch-config.js';

const SERVICES: readonly FrontedService[] = [
  { name: 'state', listen: '127.0.0.1:7404', http2Listen: '127.0.0.1:41204', http1Listen: '127.0.0.1:41104', replicas: ['127.0.0.1:41001'] },
  { name: 'admission', listen: '127.0.0.1:7401', http2Listen: '127.0.0.1:41201', http1Listen: '127.0.0.1:41101', replicas: ['127.0.0.1:41011', '127.0.0.1:41012'] },
];

let template: string;
beforeAll(async () => {
  template = await loadPortSwitchTemplate();
});

/** The lines of the section (`frontend x`, `backend y`) that starts with `heading`, up to the next section. */
function section(config: string, heading: string): string[] {
  const lines = config.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no section ${heading}`);
  const end = lines.findIndex((line, index) => index > start && /^\S/.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
}

describe('renderPortSwitchConfig', () => {
  it("binds each service's port and passes a connection that opens with HTTP/2's preface to nginx's HTTP/2 listener, any other to its HTTP/1.1 one", () => {
    const config = renderPortSwitchConfig(SERVICES, template);
    expect(section(config, 'defaults')).toContain('mode tcp');
    for (const service of SERVICES) {
      // 50524920 is "PRI ", the start of "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".
      expect(section(config, `frontend ${service.name}`)).toEqual([
        `bind ${service.listen}`,
        'tcp-request inspect-delay 10s',
        'tcp-request content accept if { req.len ge 4 }',
        `use_backend ${service.name}_http2 if { req.payload(0,4) -m bin 50524920 }`,
        `default_backend ${service.name}_http1`,
      ]);
      expect(section(config, `backend ${service.name}_http2`)).toEqual([`server nginx ${service.http2Listen}`]);
      expect(section(config, `backend ${service.name}_http1`)).toEqual([`server nginx ${service.http1Listen}`]);
    }
    expect(Buffer.from('50524920', 'hex').toString()).toBe('PRI ');
  });

  it('runs in the foreground as one process, with day-long timeouts for streams, and nothing it writes', () => {
    const config = renderPortSwitchConfig(SERVICES, template);
    expect(section(config, 'global')).toEqual(['nbthread 1']);
    expect(section(config, 'defaults')).toEqual(['mode tcp', 'timeout connect 5s', 'timeout client 1d', 'timeout server 1d']);
    expect(config).not.toMatch(/^\s*(daemon|user|group|chroot|log|stats)\b/m);
    expect(config).not.toContain('{{');
  });

  it('is a configuration HAProxy accepts (haproxy -c)', async () => {
    const { haproxy } = await locateFrontPrograms(process.env);
    const dir = await mkdtemp(join(tmpdir(), 'docket-port-switch-'));
    try {
      const file = join(dir, 'port-switch.cfg');
      await writeFile(file, renderPortSwitchConfig(SERVICES, template));
      const { stdout } = await promisify(execFile)(haproxy, ['-c', '-f', file]);
      expect(stdout).toContain('Configuration file is valid');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['a listener that smuggles a directive', [{ ...SERVICES[0]!, listen: '127.0.0.1:80\n  stats enable' }], /host:port/],
    ['an nginx listener without a port', [{ ...SERVICES[0]!, http2Listen: '127.0.0.1' }], /host:port/],
    ["the switch's port for nginx too", [{ ...SERVICES[0]!, http2Listen: SERVICES[0]!.listen }], /twice/],
    ['no service', [], /at least one service/],
  ])('refuses %s', (_what, services, message) => {
    expect(() => renderPortSwitchConfig(services as FrontedService[], template)).toThrow(message);
  });
});
