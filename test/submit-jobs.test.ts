import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@docket/client';
import { AdmissionService, type SubmitJobResponse, type SubmitJobsResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { BadRequestSchema, ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import { expectAdmissionsWhole, expectJournalVerifies, keyHashOf, submitJobDigest, type SubmitJobInit } from './support/admission-audit.js';
import { clientFor, failureOf, grpcJsUnary } from './support/clients.js';
import { runDocket } from './support/docket-cli.js';
import type { DocketServices } from './support/docket-services.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { newIdempotencyKey } from './support/keys.js';
import { freshQueue } from './support/raw-worker-harness.js';
import { admissionFootprint } from './support/sql.js';

/*
 * AdmissionService/SubmitJobs (SPEC section 14): 1 to 1,000 items, one
 * result per item in order, each exactly what SubmitJob would answer for
 * the item alone; a bad item fails alone; items share SubmitJob's keys.
 */

let cluster: DocketServices;
let sql: pg.Client;
let admission: ReturnType<typeof clientFor<typeof AdmissionService>>;
/** Each test its own owner, so that a ledger holds only that test's keys. */
const owners = new Map<string, ReturnType<typeof clientFor<typeof AdmissionService>>>();

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, { databaseUrl: await createMigratedTestDatabase('submit jobs') }));
  admission = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('batch-owner', 'user'));
});

afterAll(stopClustersWithSql);

async function ownerClient(subject: string): Promise<ReturnType<typeof clientFor<typeof AdmissionService>>> {
  const known = owners.get(subject);
  if (known) return known;
  const client = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor(subject, 'user'));
  owners.set(subject, client);
  return client;
}

function item(queue: string, input: Record<string, number | string> = {}, init: Partial<SubmitJobInit> = {}): SubmitJobInit {
  return { idempotencyKey: newIdempotencyKey('batch'), queue, input, ...init };
}

/** Each result as `submitted` (the response) or `error` (code, reason, field paths of its BadRequest). */
function outcomes(response: SubmitJobsResponse) {
  return response.results.map((result) => {
    if (result.result.case === 'submitted') return { submitted: result.result.value };
    if (result.result.case === 'error') return { error: errorOf(result.result.value) };
    throw new Error('a result with neither case');
  });
}

function errorOf(status: Status) {
  const info = status.details.find((detail) => detail.typeUrl.endsWith('/google.rpc.ErrorInfo'));
  const badRequest = status.details.find((detail) => detail.typeUrl.endsWith('/google.rpc.BadRequest'));
  return {
    code: Code[status.code],
    reason: info ? fromBinary(ErrorInfoSchema, info.value).reason : undefined,
    fields: badRequest ? fromBinary(BadRequestSchema, badRequest.value).fieldViolations.map((violation) => violation.field) : [],
  };
}

function submitted(response: SubmitJobsResponse): SubmitJobResponse[] {
  return outcomes(response).map((outcome, index) => {
    if (!outcome.submitted) throw new Error(`item ${index}: ${JSON.stringify(outcome.error)}`);
    return outcome.submitted;
  });
}

describe('SubmitJobs', () => {
  it('admits every item as SubmitJob would, answering in item order, each job with its own verified journal', async () => {
    const subject = 'batch-order';
    const client = await ownerClient(subject);
    const queue = freshQueue('batch-order');
    const items = Array.from({ length: 5 }, (_, index) => item(queue, { index }, { priority: index, label: `item ${index}` }));
    const jobs = submitted(await client.submitJobs({ items }));
    expect(jobs.map((answer) => [answer.replayed, answer.job?.input, answer.job?.label, answer.job?.priority, answer.job?.owner])).toEqual(
      items.map((_, index) => [false, { index }, `item ${index}`, index, subject]),
    );
    expect(new Set(jobs.map((answer) => answer.job?.id)).size).toBe(5);
    const bindings = await expectAdmissionsWhole(sql, subject);
    for (const [index, sent] of items.entries()) {
      bindings.expectBound(sent, jobs[index]!.job!.id);
      const journal = await expectJournalVerifies(cluster.events.url, await cluster.tokenFor(subject, 'user'), jobs[index]!.job!.id, submitJobDigest(subject, sent));
      expect(journal.map((event) => event.type)).toEqual(['job.admitted']);
    }
  });

  it('shares keys with SubmitJob: a key bound by either replays in the other, and a changed item conflicts alone', async () => {
    const subject = 'batch-shared-keys';
    const client = await ownerClient(subject);
    const queue = freshQueue('batch-shared');
    const single = item(queue, { via: 'SubmitJob' });
    const first = await client.submitJob(single);
    const [inBatch, fresh] = [item(queue, { via: 'SubmitJobs' }), item(queue, { n: 2 })];
    const batch = submitted(await client.submitJobs({ items: [single, inBatch, fresh] }));
    expect(batch[0]).toMatchObject({ replayed: true, job: { id: first.job!.id } });
    expect(batch.slice(1).map((answer) => answer.replayed)).toEqual([false, false]);
    // SubmitJob replays what SubmitJobs admitted.
    expect(await client.submitJob(inBatch)).toMatchObject({ replayed: true, job: { id: batch[1]!.job!.id } });
    // The whole call again replays every item; a changed item under a bound key conflicts and the others still replay.
    const again = outcomes(await client.submitJobs({ items: [single, { ...inBatch, input: { via: 'changed' } }, fresh] }));
    expect(again[0]!.submitted).toMatchObject({ replayed: true, job: { id: first.job!.id } });
    expect(again[1]!.error).toEqual({ code: 'AlreadyExists', reason: 'IDEMPOTENCY_CONFLICT', fields: [] });
    expect(again[2]!.submitted).toMatchObject({ replayed: true, job: { id: batch[2]!.job!.id } });
    expect(await failureOf(client.submitJob({ ...fresh, priority: 3 }))).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    expect((await expectAdmissionsWhole(sql, subject)).size).toBe(3);
  });

  it('resolves two items with one key to one job: the same item replays the first, a changed one is IDEMPOTENCY_CONFLICT', async () => {
    const subject = 'batch-duplicates';
    const client = await ownerClient(subject);
    const queue = freshQueue('batch-dup');
    const twice = item(queue, { n: 1 });
    const answers = outcomes(await client.submitJobs({ items: [twice, item(queue), twice, { ...twice, input: { n: 2 } }, twice] }));
    const id = answers[0]!.submitted!.job!.id;
    expect(answers[0]!.submitted!.replayed).toBe(false);
    expect(answers[2]!.submitted).toMatchObject({ replayed: true, job: { id } });
    expect(answers[3]!.error).toEqual({ code: 'AlreadyExists', reason: 'IDEMPOTENCY_CONFLICT', fields: [] });
    expect(answers[4]!.submitted).toMatchObject({ replayed: true, job: { id } });
    expect((await expectAdmissionsWhole(sql, subject)).size).toBe(2);
  });

  it('fails a bad item alone with the error SubmitJob gives, field paths relative to the item, and admits the rest', async () => {
    const subject = 'batch-bad-items';
    const client = await ownerClient(subject);
    const queue = freshQueue('batch-bad');
    const items: SubmitJobInit[] = [
      item(queue, { n: 0 }),
      item('Not A Queue'),
      { queue, input: {} },
      item(queue, { n: 3 }, { label: 'nul \u0000 inside' }),
      item(queue, { big: 'x'.repeat(300_000) }),
      item(queue, { n: 5 }),
    ];
    const answers = outcomes(await client.submitJobs({ items }));
    const single = async (sent: SubmitJobInit) => {
      const failure = await failureOf(client.submitJob(sent));
      return { code: Code[failure.code], reason: failure.reason, fields: failure.violations.map((violation) => violation.field) };
    };
    for (const index of [1, 2, 3, 4]) {
      expect(answers[index]!.error, `item ${index}`).toEqual(await single(items[index]!));
      expect(answers[index]!.error!.fields.length, `item ${index}`).toBeGreaterThan(0);
      for (const field of answers[index]!.error!.fields) expect(field).not.toMatch(/^items/);
    }
    expect(answers.map((answer) => answer.error?.reason)).toEqual([undefined, 'INVALID_FIELD', 'INVALID_FIELD', 'INVALID_FIELD', 'LIMIT_EXCEEDED', undefined]);
    expect([answers[0]!.submitted?.job?.input, answers[5]!.submitted?.job?.input]).toEqual([{ n: 0 }, { n: 5 }]);
    expect((await expectAdmissionsWhole(sql, subject)).size).toBe(2);
  });

  it('admits 1,000 items in one call; 1,001 is BATCH_TOO_LARGE and 0 is INVALID_FIELD, and neither admits anything', async () => {
    const subject = 'batch-thousand';
    const client = await ownerClient(subject);
    const queue = freshQueue('batch-1000');
    const items = Array.from({ length: 1_000 }, (_, index) => item(queue, { index }));
    const jobs = submitted(await client.submitJobs({ items }));
    expect(jobs.map((answer) => answer.job?.input)).toEqual(items.map((sent) => sent.input));
    expect((await expectAdmissionsWhole(sql, subject)).size).toBe(1_000);

    const tooMany = await failureOf(client.submitJobs({ items: [...Array.from({ length: 1_001 }, (_, index) => item(queue, { index: index + 1_000 }))] }));
    expect(tooMany).toMatchObject({ code: Code.InvalidArgument, reason: 'BATCH_TOO_LARGE', metadata: { limit: 'submitJobsItems', max: '1000' } });
    expect(await failureOf(client.submitJobs({ items: [] }))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    expect((await expectAdmissionsWhole(sql, subject)).size).toBe(1_000);
  }, 60_000);

  it('answers a grpc-js caller with the same results as a Connect caller, a bad item as a google.rpc.Status', async () => {
    const subject = 'batch-grpc-js';
    const token = await cluster.tokenFor(subject, 'user');
    const queue = freshQueue('batch-grpcjs');
    const before = await admissionFootprint(sql);
    const response = await grpcJsUnary(cluster.admission.url, AdmissionService.method.submitJobs, { items: [item(queue, { n: 1 }), item('BAD')] }, token);
    const answers = outcomes(response);
    expect(answers[0]!.submitted?.job?.input).toEqual({ n: 1 });
    expect(answers[1]!.error).toEqual({ code: 'InvalidArgument', reason: 'INVALID_FIELD', fields: ['queue'] });
    expect((await admissionFootprint(sql))['jobs']).toBe((before['jobs'] ?? 0) + 1);
  });

  it('answers Connect JSON over HTTP/1.1 too, a bad item\'s status with its ErrorInfo and BadRequest named by type', async () => {
    const token = await cluster.tokenFor('batch-json', 'user');
    const queue = freshQueue('batch-json');
    const response = await fetch(`${cluster.admission.url}/docket.admission.v1.AdmissionService/SubmitJobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ items: [{ idempotencyKey: newIdempotencyKey('json'), queue, input: { n: 1 } }, { idempotencyKey: newIdempotencyKey('json'), queue: 'BAD' }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { results: { submitted?: { job: { input: unknown } }; error?: { code: number; details: { '@type': string; reason?: string; fieldViolations?: { field: string }[] }[] } }[] };
    expect(body.results[0]!.submitted?.job.input).toEqual({ n: 1 });
    expect(body.results[1]!.error).toMatchObject({
      code: Code.InvalidArgument,
      details: expect.arrayContaining([
        expect.objectContaining({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_FIELD' }),
        expect.objectContaining({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [expect.objectContaining({ field: 'queue' })] }),
      ]),
    });
  });

  it('is refused to a worker token, and its call-level errors carry ErrorInfo', async () => {
    const worker = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('batch-worker', 'worker', ['q']));
    expect(await failureOf(worker.submitJobs({ items: [item('q')] }))).toMatchObject({ code: Code.PermissionDenied, reason: 'PERMISSION_DENIED' });
    expect(await failureOf(admission.submitJobs({ items: [] }))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'items' }] });
  });
});

describe('the TS client\'s submitMany', () => {
  it('admits 2,500 jobs in calls of at most 1,000, in order, each with its own answer; a bad job fails alone, a malformed key is refused without a call', async () => {
    const subject = 'batch-submit-many';
    const client = createClient({ admissionUrl: cluster.admission.url, eventsUrl: cluster.events.url, token: await cluster.tokenFor(subject, 'user') });
    try {
      const queue = freshQueue('submit-many');
      const jobs = Array.from({ length: 2_500 }, (_, index) => ({ queue, input: { index } }));
      const repeated = newIdempotencyKey('repeat');
      const batch = [...jobs, { queue: 'Bad Queue' }, { queue, idempotencyKey: 'short' }, { queue, idempotencyKey: repeated }, { queue, idempotencyKey: repeated }];
      const progress: number[] = [];
      const results = await client.submitMany(batch, { onProgress: (answered, total) => progress.push(answered / total) });
      expect(results).toHaveLength(batch.length);
      // 1 job answered locally, then 2,503 jobs sent in three calls.
      expect(progress).toEqual([1_001 / 2_504, 2_001 / 2_504, 1]);
      for (const [index, result] of results.slice(0, 2_500).entries()) {
        expect(result.ok && result.job.input, `job ${index}`).toEqual({ index });
      }
      const [badQueue, badKey, first, second] = results.slice(2_500);
      expect(!badQueue!.ok && [badQueue!.error.reason, badQueue!.error.fieldViolations.map((violation) => violation.field)]).toEqual(['INVALID_FIELD', ['queue']]);
      expect(!badKey!.ok && [badKey!.error.reason, badKey!.idempotencyKey]).toEqual(['INVALID_FIELD', 'short']);
      expect(first!.ok && second!.ok && [first!.replayed, second!.replayed, second!.job.id === first!.job.id]).toEqual([false, true, true]);
      expect((await expectAdmissionsWhole(sql, subject)).size).toBe(2_501);
      // The same jobs again, keys and all, replay every one.
      const keyed = results.slice(0, 2_500).map((result, index) => ({ ...jobs[index]!, idempotencyKey: result.idempotencyKey }));
      const again = await client.submitMany(keyed);
      expect(again.every((result, index) => result.ok && result.replayed && result.job.id === (results[index] as { job: { id: string } }).job.id)).toBe(true);
    } finally {
      client.close();
    }
  }, 60_000);
});

describe('docket submit --file', () => {
  it('admits every line of an NDJSON file in order, reports each refused line, and with the same --key replays the file instead of admitting it twice', async () => {
    const subject = 'batch-cli-file';
    const token = await cluster.tokenFor(subject, 'user');
    const directory = await mkdtemp(join(tmpdir(), 'docket-submit-file-'));
    try {
      const queue = freshQueue('cli-file');
      const lines = Array.from({ length: 1_200 }, (_, index) => JSON.stringify({ queue, input: { index } }));
      lines.splice(3, 0, JSON.stringify({ queue: 'Bad Queue' }), 'not json', '');
      const file = join(directory, 'jobs.ndjson');
      await writeFile(file, `${lines.join('\n')}\n`);
      const key = newIdempotencyKey('cli-file');
      const args = ['submit', '--file', file, '--key', key, '--url', cluster.admission.url, '--token', token];

      const first = await runDocket(args);
      expect(first.code).toBe(1);
      expect(first.stdout).toBe(`submitted 1200 jobs from ${file} (0 replayed, 2 failed)\n`);
      expect(first.stderr.split('\n').filter((line) => line.startsWith('docket submit: line '))).toEqual([
        expect.stringMatching(/^docket submit: line 4: invalid_argument INVALID_FIELD: .* \(queue: .+\)$/),
        expect.stringMatching(/^docket submit: line 5: invalid_argument: not a SubmitJob request in proto3 JSON/),
      ]);
      expect(first.stderr).not.toContain(key);
      expect((await expectAdmissionsWhole(sql, subject)).size).toBe(1_200);
      // Line 1 is the first job, keyed <key>.1; the blank line 6 moved the rest down by three.
      const stored = await sql.query<{ input: unknown }>('select j.input from idempotency_records r join jobs j on j.id = r.job_id where r.key_hash = $1', [Buffer.from(keyHashOf(`${key}.1`), 'hex')]);
      expect(stored.rows.map((row) => row.input)).toEqual([{ index: 0 }]);

      const again = await runDocket([...args, '--json']);
      expect(again.code).toBe(1);
      const answers = again.stdout.trim().split('\n').map((line) => JSON.parse(line) as { line: number; submitted?: { replayed: boolean; job: { input: unknown } }; error?: { code: string; reason: string | null } });
      expect(answers).toHaveLength(1_202);
      expect(answers.filter((answer) => answer.error).map((answer) => [answer.line, answer.error!.code, answer.error!.reason])).toEqual([
        [4, 'invalid_argument', 'INVALID_FIELD'],
        [5, 'invalid_argument', null],
      ]);
      expect(answers.filter((answer) => answer.submitted).every((answer) => answer.submitted!.replayed)).toBe(true);
      expect(answers[0]).toMatchObject({ line: 1, submitted: { job: { input: { index: 0 } } } });
      expect((await expectAdmissionsWhole(sql, subject)).size).toBe(1_200);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 60_000);
});
