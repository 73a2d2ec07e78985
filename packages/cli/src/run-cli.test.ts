import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SERVICE_AUDIENCE, verifyBearer } from '@docket/auth';
import type { CliContext } from './command.js';
import { loadOrCreateDevSecrets } from './dev-secrets.js';
import { runCli } from './run-cli.js';

let cwd: string;
beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'docket-cli-'));
});
afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const context: CliContext = { env, cwd, out: (text) => (out += text), err: (text) => (err += text) };
  const code = await runCli(argv, context);
  return { code, out, err };
}

describe('docket help', () => {
  it('lists the commands', async () => {
    for (const argv of [[], ['help'], ['--help']]) {
      const { code, out } = await run(argv);
      expect(code).toBe(0);
      expect(out).toMatch(/^Usage: docket <command>/);
      expect(out).toMatch(/\n {2}dev +run the whole system locally/);
      expect(out).toMatch(/\n {2}token +mint a bearer token/);
      expect(out).toMatch(/\n {2}verify +re-read a job's journal and check its hash chain/);
    }
  });

  it('explains one command, also as <command> --help', async () => {
    const viaHelp = await run(['help', 'dev']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.out).toContain('DOCKET_ADMISSION_PORT');
    expect((await run(['dev', '--help'])).out).toBe(viaHelp.out);
    expect((await run(['token', '-h'])).out).toMatch(/^Usage: docket token --subject/);
  });

  it('rejects an unknown command with exit code 2', async () => {
    const { code, err } = await run(['deploy']);
    expect(code).toBe(2);
    expect(err).toMatch(/unknown command "deploy"/);
    expect((await run(['help', 'deploy'])).code).toBe(2);
  });
});

describe('docket token', () => {
  const secret = 'a-secret-of-sufficient-length';

  it('mints a token with DOCKET_AUTH_SECRET that expires after a day by default', async () => {
    const { code, out } = await run(['token', '--subject', 'alice', '--role', 'admin'], { DOCKET_AUTH_SECRET: secret });
    expect(code).toBe(0);
    expect(await verifyBearer(`Bearer ${out.trim()}`, secret)).toMatchObject({
      ok: true,
      principal: { subject: 'alice', role: 'admin' },
    });
    const claims = JSON.parse(Buffer.from(out.trim().split('.')[1] ?? '', 'base64url').toString()) as { exp?: number; iat: number };
    expect(claims.exp! - claims.iat).toBe(86_400);
  });

  it("mints a service token only with --allow-service, with the state service's own secret, for at most an hour", async () => {
    const serviceSecret = 'the-state-services-own-secret-for-this-test';
    const env = { DOCKET_AUTH_SECRET: secret, DOCKET_SERVICE_AUTH_SECRET: serviceSecret };
    const refused = await run(['token', '--subject', 'front', '--role', 'service'], env);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/--role service needs --allow-service/);
    expect(refused.out).toBe('');
    const minted = await run(['token', '--subject', 'front', '--role', 'service', '--allow-service'], env);
    expect(minted.code).toBe(0);
    const token = `Bearer ${minted.out.trim()}`;
    expect(await verifyBearer(token, serviceSecret, { audience: SERVICE_AUDIENCE })).toMatchObject({ ok: true, principal: { role: 'service' } });
    expect(await verifyBearer(token, secret)).toEqual({ ok: false, refusal: 'invalid' });
    const claims = JSON.parse(Buffer.from(minted.out.trim().split('.')[1] ?? '', 'base64url').toString()) as { exp: number; iat: number };
    expect(claims.exp - claims.iat).toBe(3_600);
    const tooLong = await run(['token', '--subject', 'front', '--role', 'service', '--allow-service', '--ttl', '3601'], env);
    expect([tooLong.code, tooLong.err]).toEqual([2, expect.stringMatching(/--ttl must be a positive whole number of seconds, at most 3600/)]);
  });

  it('grants a worker token its queues, and only a worker token', async () => {
    const minted = await run(['token', '--subject', 'w', '--role', 'worker', '--queue', 'emails', '--queue', 'reports'], { DOCKET_AUTH_SECRET: secret });
    expect(minted.code).toBe(0);
    expect(await verifyBearer(`Bearer ${minted.out.trim()}`, secret)).toMatchObject({ ok: true, principal: { role: 'worker', queues: ['emails', 'reports'] } });
    const user = await run(['token', '--subject', 'u', '--role', 'user', '--queue', 'emails'], { DOCKET_AUTH_SECRET: secret });
    expect([user.code, user.err]).toEqual([2, expect.stringMatching(/--queue is for --role worker only/)]);
  });

  it('falls back to the secret docket dev keeps in the data directory', async () => {
    const { authSecret } = await loadOrCreateDevSecrets(join(cwd, 'data'));
    const { code, out } = await run(['token', '--subject=w', '--role=worker', '--ttl=60'], {
      DOCKET_DATA_DIR: 'data',
    });
    expect(code).toBe(0);
    const [, payload] = out.trim().split('.');
    const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as { exp: number; iat: number };
    expect(claims.exp - claims.iat).toBe(60);
    expect(await verifyBearer(`Bearer ${out.trim()}`, authSecret)).toMatchObject({ ok: true });
  });

  it('fails with exit code 1 when there is no secret at all', async () => {
    const { code, err } = await run(['token', '--subject', 'a', '--role', 'user']);
    expect(code).toBe(1);
    expect(err).toMatch(/no signing secret: set DOCKET_AUTH_SECRET, or run docket dev once/);
  });

  it.each([
    [['--role', 'user'], /--subject is required/],
    [['--subject', 'a', '--role', 'root'], /--role must be one of user, admin, worker, service/],
    [['--subject', 'a', '--role', 'user', '--ttl=-5'], /--ttl must be a positive whole number/],
    [['--subject', 'a', '--role', 'user', '--ttl', '1.5'], /--ttl must be a positive whole number/],
    [['--subject', 'a', '--role', 'user', '--ttl', '31536001'], /at most 31536000/],
    [['--subject', 'a', '--role', 'user', '--bogus'], /Unknown option '--bogus'/],
  ])('rejects %j with exit code 2', async (args, message) => {
    const { code, err } = await run(['token', ...args], { DOCKET_AUTH_SECRET: secret });
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).toContain('See: docket help token');
  });
});
