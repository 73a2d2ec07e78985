import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { AcceptRollbackResponseSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { formatRollbackReport } from './admin-command.js';
import type { CliContext } from './command.js';
import { runCli } from './run-cli.js';

async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const context: CliContext = { env, cwd: '/nonexistent-docket-cwd', out: (text) => (out += text), err: (text) => (err += text) };
  const code = await runCli(argv, context);
  return { code, out, err };
}

const SECRET = { DOCKET_SERVICE_AUTH_SECRET: 'service-secret-0123456789-nopqrstuvwxyz' };

describe('docket admin', () => {
  it('takes one action, accept-rollback, and http(s) state URLs', async () => {
    expect(await run(['admin'], SECRET)).toMatchObject({ code: 2, err: expect.stringContaining('name an action: accept-rollback') });
    expect(await run(['admin', 'forget-everything'], SECRET)).toMatchObject({ code: 2, err: expect.stringContaining('unknown action "forget-everything"') });
    expect(await run(['admin', 'accept-rollback', 'extra'], SECRET)).toMatchObject({ code: 2, err: expect.stringContaining('unexpected extra') });
    expect(await run(['admin', 'accept-rollback', '--state-url', 'ftp://state'], SECRET)).toMatchObject({ code: 2, err: expect.stringContaining('--state-url must be an http:// or https:// URL') });
  });

  it("signs with the state service's secret, and says how to provide one", async () => {
    const { code, err } = await run(['admin', 'accept-rollback'], {});
    expect(code).toBe(1);
    expect(err).toContain('DOCKET_SERVICE_AUTH_SECRET');
  });

  it('reports a replica it cannot reach, by its URL, and fails', async () => {
    const { code, err } = await run(['admin', 'accept-rollback', '--state-url', 'http://127.0.0.1:1'], SECRET);
    expect(code).toBe(1);
    expect(err).toMatch(/^docket admin accept-rollback: http:\/\/127\.0\.0\.1:1: unavailable/);
  });
});

describe('formatRollbackReport', () => {
  it('prints the window, the lost jobs and whether it was accepted', () => {
    const report = create(AcceptRollbackResponseSchema, {
      rolledBack: true,
      accepted: true,
      cause: 'timeline',
      recordedSystemIdentifier: '7312345678901234567',
      systemIdentifier: '7312345678901234567',
      recordedTimeline: 1,
      timeline: 2,
      forkLsn: '0/5000060',
      forkSource: 'timeline_history',
      acknowledgedLsn: '0/5A00000',
      checkedJobCount: 3,
      lostJobIds: ['job_a', 'job_b'],
      windowStartLsn: '0/5000100',
    });
    expect(formatRollbackReport('http://state:7404', report, false)).toBe(
      [
        'http://state:7404: rolled back (timeline): timeline 1 -> 2, system 7312345678901234567',
        '  fork point 0/5000060 (from the new timeline history); acknowledged up to 0/5A00000',
        '  3 acknowledged job(s) after the fork point checked, 2 lost',
        '  lost job_a',
        '  lost job_b',
        '  accepted: serving again',
        '',
      ].join('\n'),
    );
    expect(formatRollbackReport('http://state:7404', { ...report, accepted: false, windowTruncated: true }, true)).toContain(
      '2 lost (the window was full: jobs acknowledged before 0/5000100 were not kept)\n  lost job_a\n  lost job_b\n  not accepted (--dry-run): still refusing calls\n',
    );
    expect(formatRollbackReport('http://state:7404', create(AcceptRollbackResponseSchema, {}), false)).toBe('http://state:7404: no rollback found; nothing to accept\n');
  });
});
