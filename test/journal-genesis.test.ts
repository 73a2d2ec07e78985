import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, toJson } from '@bufbuild/protobuf';
import { AdmissionService, SubmitJobRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientFor } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { openSql } from './support/sql.js';

/*
 * An independent reading of SPEC section 6, deliberately sharing no code with
 * packages/contracts: if the production chain drifts from the SPEC, these
 * hashes stop matching.
 */
function jcs(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${jcs(v)}`).join(',')}}`;
}

function lengthPrefixed(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function specHash(event: { job_id: string; sequence: string; previous_hash: string; type: string; payload: unknown; occurred_at: Date }, requestDigest: string): string {
  const preimage = Buffer.concat([
    Buffer.from('docket.job-event.chain', 'ascii'),
    Buffer.from([0x00, 0x01]),
    lengthPrefixed(event.job_id),
    lengthPrefixed(requestDigest),
    lengthPrefixed(String(BigInt(event.sequence))),
    lengthPrefixed(event.previous_hash),
    lengthPrefixed(event.type),
    lengthPrefixed(jcs({ payload: event.payload, occurred_at: event.occurred_at.toISOString() })),
  ]);
  return createHash('sha256').update(preimage).digest('hex');
}

let cluster: DocketServices;
let databaseUrl: string;

beforeAll(async () => {
  databaseUrl = await createMigratedTestDatabase('journal genesis');
  cluster = await startInProcessCluster({ databaseUrl });
});

afterAll(stopInProcessClusters);

describe('job.admitted', () => {
  it('is event 1 of the journal, chained from 64 zeros, with a hash the SPEC preimage reproduces', async () => {
    const token = await cluster.tokenFor('alice', 'user');
    const request = {
      idempotencyKey: newIdempotencyKey('genesis'),
      queue: 'email',
      input: { to: 'ada@example.com', n: 1.5, nested: { z: 1, a: [true, null, 'é'] } },
      label: 'welcome',
      priority: -2,
    };
    const { job } = await clientFor(AdmissionService, cluster.admission.url, token).submitJob(request);
    const sql = await openSql(databaseUrl);
    try {
      const events = await sql.query('select * from job_events where job_id = $1 order by sequence', [job!.id]);
      const row = (await sql.query('select request_digest, event_count, head_hash from jobs where id = $1', [job!.id])).rows[0];
      expect(events.rows).toHaveLength(1);
      const [admitted] = events.rows;
      expect(admitted).toMatchObject({ sequence: '1', type: 'job.admitted', previous_hash: '0'.repeat(64) });
      expect(admitted.payload).toMatchObject({ queue: 'email', priority: -2, label: 'welcome' });
      const clientSideDigest = createHash('sha256')
        .update(
          jcs({
            operation: 'docket.admission.v1.AdmissionService/SubmitJob',
            subject: 'alice',
            request: toJson(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { ...request, idempotencyKey: '' })),
          }),
        )
        .digest('hex');
      expect(row.request_digest).toBe(clientSideDigest);
      expect(admitted.hash).toBe(specHash(admitted, row.request_digest));
      expect(row).toMatchObject({ event_count: '1', head_hash: admitted.hash });
      expect(job!.latestSequence).toBe(1n);
    } finally {
      await sql.end();
    }
  });
});
