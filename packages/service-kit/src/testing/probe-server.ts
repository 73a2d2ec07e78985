import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceImpl } from '@connectrpc/connect';
import { mintToken, type Role } from '@docket/auth';
import { DocketError } from '@docket/contracts';
import { remainingTimeoutMs } from '../deadline.js';
import { drainSignalOf } from '../drain-signal.js';
import { createLogger, type LogLevel } from '../logger.js';
import { principalOf } from '../principal.js';
import { startServer, type RunningServer, type ServerOptions } from '../server.js';
import { ProbeService } from './probe-service.js';

export const PROBE_SECRET = 'probe-secret-that-is-long-enough-for-hs256';

/** The field errors every protocol must deliver identically. */
export const PROBE_VIOLATIONS = [
  { field: 'queue', description: 'must match the queue name pattern' },
  { field: 'label', description: 'exceeds the label limit of 256', reason: 'LIMIT_EXCEEDED' },
];

/** A message that must never reach a client or a log line. */
export const SECRET_BUG_MESSAGE = 'SELECT * FROM jobs WHERE token = sekrit-4711 postgres://u:pw@db';

/**
 * The probe service's behaviour, chosen by the request text:
 * `who` answers the caller, `docket-error` throws a DocketError with field
 * violations, `bug` throws a plain Error whose message is secret,
 * `deadline` answers the remaining timeout, `sleep:<ms>` waits; Count
 * streams `count` replies, `fail-mid` / `bug-mid` fail after the first,
 * `until-drained` streams until the server drains, then sends `drained`;
 * Converse answers each request as it arrives with `count` replies (at
 * least one) numbered across the stream, and fails at a request `fail`
 * (a DocketError) or `bug` (a plain Error whose message is secret).
 */
export const probeImplementation: Partial<ServiceImpl<typeof ProbeService>> = {
  async echo(request, ctx) {
    const [command, argument] = request.text.split(':');
    switch (command) {
      case 'who': {
        const principal = principalOf(ctx);
        return { text: `${principal.subject}/${principal.role}` };
      }
      case 'docket-error':
        throw new DocketError('INVALID_FIELD', 'invalid request', {
          metadata: { checked: 'queue,label' },
          fieldViolations: PROBE_VIOLATIONS,
        });
      case 'bug':
        throw new Error(SECRET_BUG_MESSAGE);
      case 'deadline':
        return { text: String(remainingTimeoutMs(ctx) ?? 'none') };
      case 'sleep':
        await sleep(Number(argument), undefined, { signal: ctx.signal });
        return { text: 'slept' };
      default:
        return { text: request.text, sequence: request.count };
    }
  },
  async *count(request, ctx) {
    for (let sequence = 1; sequence <= request.count; sequence++) {
      yield { text: request.text, sequence };
      if (request.text === 'fail-mid') {
        throw new DocketError('NOT_FOUND', 'job not found');
      }
      if (request.text === 'bug-mid') throw new Error(SECRET_BUG_MESSAGE);
    }
    if (request.text === 'until-drained') {
      const drain = drainSignalOf(ctx);
      if (!drain.aborted) {
        await new Promise((resolve) => drain.addEventListener('abort', resolve, { once: true }));
      }
      yield { text: 'drained', sequence: 0 };
    }
    if (request.text === 'until-aborted') {
      // Ignores the drain: only the hard stop ends it.
      if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      throw ctx.signal.reason;
    }
  },
  async *converse(requests) {
    let sequence = 0;
    for await (const request of requests) {
      if (request.text === 'fail') throw new DocketError('NOT_FOUND', 'job not found');
      if (request.text === 'bug') throw new Error(SECRET_BUG_MESSAGE);
      for (let sent = 0; sent < Math.max(1, request.count); sent++) yield { text: request.text, sequence: (sequence += 1) };
    }
  },
};

/** A probe server on 127.0.0.1:0 whose log lines are captured. */
export interface ProbeHarness {
  readonly server: RunningServer;
  readonly url: string;
  /** Every log line, raw. */
  readonly lines: string[];
  /** The parsed log lines with `msg: "rpc"`. */
  rpcLines(): Record<string, unknown>[];
  token(role?: Role, options?: { subject?: string; ttlSeconds?: number; secret?: string }): Promise<string>;
}

/**
 * Starts the probe service with the kit, as a Docket service would. Its
 * logger writes every level by default, successful RPCs' `debug` lines
 * included, so tests see one `rpc` line per call; pass `'info'` as
 * `logLevel` to see what a service writes by default.
 */
export async function startProbeServer(
  overrides: Partial<Omit<ServerOptions, 'logger' | 'listen'>> = {},
  logLevel: LogLevel = 'debug',
): Promise<ProbeHarness> {
  const lines: string[] = [];
  const server = await startServer({
    name: 'probe',
    listen: { host: '127.0.0.1', port: 0 },
    services: [ProbeService],
    routes: (router) => router.service(ProbeService, probeImplementation),
    authenticate: { secret: PROBE_SECRET, allowedRoles: ['user', 'admin'] },
    ...overrides,
    logger: createLogger('probe', (line) => lines.push(line), logLevel),
  });
  return {
    server,
    url: server.url,
    lines,
    rpcLines: () =>
      lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry['msg'] === 'rpc'),
    token: (role = 'user', options = {}) =>
      mintToken({
        secret: options.secret ?? PROBE_SECRET,
        subject: options.subject ?? 'alice',
        role,
        ttlSeconds: options.ttlSeconds ?? 3_600,
      }),
  };
}
