import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENESIS_HASH, computeEventHash } from '@docket/contracts';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { docketVerify as runDocketVerify } from './support/docket-cli.js';
import { clientFor, failureOf } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { JobWriter, submitJobs } from './support/job-writer.js';
import { storedEvents } from './support/sql.js';

/*
 * Damage no API allows, made directly in the database, must be seen by
 * every reader: the state service's ReadJobEvents, the events service's
 * public ReadJobEvents, and `docket verify`. And, honestly, what the chain
 * cannot see: a rewrite that recomputes every hash.
 */

const OWNER = 'tamper-owner';
/** Every job here gets `job.admitted` plus five worker events. */
const JOURNAL_LENGTH = 6;

let cluster: DocketServices;
let sql: pg.Client;
let ownerToken: string;
let adminToken: string;
let writer: JobWriter;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, { databaseUrl: await createMigratedTestDatabase('journal tamper') }));
  ownerToken = await cluster.tokenFor(OWNER, 'user');
  adminToken = await cluster.tokenFor('tamper-admin', 'admin');
  writer = new JobWriter(cluster.state.url, cluster.serviceToken, OWNER);
});

afterAll(stopClustersWithSql);

/** A new job of the owner's with a journal of {@link JOURNAL_LENGTH} events. */
async function sixEventJournal(): Promise<string> {
  const [jobId] = await submitJobs(cluster.admission.url, ownerToken, 1);
  await writer.append(jobId!, JOURNAL_LENGTH - 1);
  return jobId!;
}

/** Reads one page after `afterSequence` through the state service and through the events service. */
function readers(jobId: string) {
  const state = clientFor(StateService, cluster.state.url, cluster.serviceToken);
  const events = clientFor(EventService, cluster.events.url, ownerToken);
  return {
    state: (afterSequence: bigint) => state.readJobEvents({ caller: { subject: OWNER }, jobId, afterSequence, pageSize: 0 }),
    events: (afterSequence: bigint) => events.readJobEvents({ jobId, afterSequence, pageSize: 0 }),
  };
}

/** `docket verify` as a user runs it: the built CLI in a child process. */
function docketVerify(jobId: string) {
  return runDocketVerify(cluster.events.url, adminToken, jobId);
}


async function headOf(jobId: string): Promise<{ event_count: string; head_hash: string; request_digest: string }> {
  return (await sql.query('select event_count, head_hash, request_digest from jobs where id = $1', [jobId])).rows[0];
}

/** Copies `from`'s event at `sequence` into `to`'s journal at `sequence`, keeping its own previous hash and hash. */
async function graft(from: string, to: string, sequence: number): Promise<void> {
  await sql.query('delete from job_events where job_id = $1 and sequence = $2', [to, sequence]);
  await sql.query(
    `insert into job_events (job_id, sequence, type, payload, occurred_at, attempt_id, fence, previous_hash, hash)
     select $2, sequence, type, payload, occurred_at, attempt_id, fence, previous_hash, hash
       from job_events where job_id = $1 and sequence = $3`,
    [from, to, sequence],
  );
}

interface Tampering {
  /** Damages the job's journal (or row) in the database; resolves to the first sequence that no longer verifies. */
  readonly apply: (jobId: string) => Promise<number>;
}

const tamperings: Record<string, Tampering> = {
  'a payload edited without recomputing its hash': {
    apply: async (jobId) => {
      await sql.query(`update job_events set payload = payload || '{"amount": 1000000}' where job_id = $1 and sequence = 3`, [jobId]);
      return 3;
    },
  },
  'an interior event deleted': {
    apply: async (jobId) => {
      await sql.query('delete from job_events where job_id = $1 and sequence = 3', [jobId]);
      return 3;
    },
  },
  'two events swapped (their sequence numbers exchanged)': {
    apply: async (jobId) => {
      const move = (from: number, to: number) =>
        sql.query('update job_events set sequence = $3 where job_id = $1 and sequence = $2', [jobId, from, to]);
      await move(3, 1_000);
      await move(4, 3);
      await move(1_000, 4);
      return 3;
    },
  },
  "an event grafted from another job into the journal's interior": {
    apply: async (jobId) => {
      await graft(await sixEventJournal(), jobId, 3);
      return 3;
    },
  },
  'an event grafted from another job at the head, with count and head moved to it': {
    apply: async (jobId) => {
      const donor = await sixEventJournal();
      await writer.append(donor, 1);
      await graft(donor, jobId, JOURNAL_LENGTH + 1);
      const [grafted] = (await storedEvents(sql, jobId)).slice(-1);
      await sql.query('update jobs set event_count = $2, head_hash = $3 where id = $1', [jobId, JOURNAL_LENGTH + 1, grafted!.hash]);
      return JOURNAL_LENGTH + 1;
    },
  },
  "the job's event_count raised": {
    apply: async (jobId) => {
      await sql.query('update jobs set event_count = event_count + 1 where id = $1', [jobId]);
      return JOURNAL_LENGTH + 1;
    },
  },
  "the job's event_count lowered": {
    apply: async (jobId) => {
      await sql.query('update jobs set event_count = event_count - 1 where id = $1', [jobId]);
      return JOURNAL_LENGTH;
    },
  },
  "the job's head_hash changed": {
    apply: async (jobId) => {
      await sql.query(`update jobs set head_hash = repeat('a', 64) where id = $1`, [jobId]);
      return JOURNAL_LENGTH;
    },
  },
};

describe('an untouched journal', () => {
  it('reads in full through both services and verifies as intact', async () => {
    const jobId = await sixEventJournal();
    const read = readers(jobId);
    for (const page of [await read.state(0n), await read.events(0n)]) {
      expect(page.events.map((event) => event.sequence)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
      expect(page.latestSequence).toBe(6n);
    }
    const { head_hash } = await headOf(jobId);
    expect(await docketVerify(jobId)).toEqual({ code: 0, stdout: `intact: ${jobId}, 6 events, head ${head_hash}\n`, stderr: '' });
  });
});

describe('tampering in the database is detected by every reader', () => {
  it.each(Object.entries(tamperings))('%s', async (_, tampering) => {
    const jobId = await sixEventJournal();
    const broken = await tampering.apply(jobId);
    const corrupt = { code: Code.DataLoss, reason: 'JOURNAL_CORRUPT', metadata: expect.objectContaining({ sequence: String(broken) }) };
    const read = readers(jobId);
    for (const via of ['state', 'events'] as const) {
      // The whole journal, and a read that starts right after the damaged event's predecessor.
      for (const afterSequence of [0n, BigInt(broken - 1)]) {
        expect(await failureOf(read[via](afterSequence)), `${via} after ${afterSequence}`).toMatchObject(corrupt);
      }
    }
    const verified = await docketVerify(jobId);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toMatch(new RegExp(`^broken at sequence ${broken}: .+\\n$`));
    expect(verified.stderr).toBe('');
  });
});

describe('the limit of an unkeyed chain', () => {
  it('does NOT detect a rewrite that recomputes every hash, the count and the head: reads succeed and verify says intact', async () => {
    const jobId = await sixEventJournal();
    const { request_digest: requestDigest } = await headOf(jobId);
    // Rewrite history: change what event 3 says, drop event 5, and re-chain everything after the edit.
    await sql.query(`update job_events set payload = '{"decision": "approved"}' where job_id = $1 and sequence = 3`, [jobId]);
    await sql.query('delete from job_events where job_id = $1 and sequence = 5', [jobId]);
    await sql.query('update job_events set sequence = 5 where job_id = $1 and sequence = 6', [jobId]);
    let previousHash = GENESIS_HASH;
    for (const row of await storedEvents(sql, jobId)) {
      const hash = computeEventHash({
        jobId,
        requestDigest,
        sequence: BigInt(row.sequence),
        previousHash,
        type: row.type,
        payload: row.payload,
        occurredAt: row.occurred_at,
      });
      await sql.query('update job_events set previous_hash = $3, hash = $4 where job_id = $1 and sequence = $2', [
        jobId,
        row.sequence,
        previousHash,
        hash,
      ]);
      previousHash = hash;
    }
    await sql.query('update jobs set event_count = 5, head_hash = $2 where id = $1', [jobId, previousHash]);

    const read = readers(jobId);
    for (const page of [await read.state(0n), await read.events(0n)]) {
      expect(page.latestSequence).toBe(5n);
      expect(page.events[2]!.payload).toEqual({ decision: 'approved' });
    }
    expect(await docketVerify(jobId)).toEqual({ code: 0, stdout: `intact: ${jobId}, 5 events, head ${previousHash}\n`, stderr: '' });
  });

  it('does NOT detect an edited attempt_id or fence: the hash preimage does not cover them', async () => {
    const jobId = await sixEventJournal();
    await sql.query(`update job_events set attempt_id = 'att_forged', fence = 99 where job_id = $1 and sequence = 3`, [jobId]);

    const read = readers(jobId);
    for (const page of [await read.state(0n), await read.events(0n)]) {
      expect(page.events[2]).toMatchObject({ attemptId: 'att_forged', fence: 99n });
    }
    expect((await docketVerify(jobId)).code).toBe(0);
  });

  it('does NOT detect the newest events dropped together with the count and head, which needs no hash recomputed', async () => {
    const jobId = await sixEventJournal();
    const kept = (await storedEvents(sql, jobId))[3]!;
    await sql.query('delete from job_events where job_id = $1 and sequence > 4', [jobId]);
    await sql.query('update jobs set event_count = 4, head_hash = $2 where id = $1', [jobId, kept.hash]);

    const read = readers(jobId);
    for (const page of [await read.state(0n), await read.events(0n)]) {
      expect(page.events.map((event) => event.sequence)).toEqual([1n, 2n, 3n, 4n]);
    }
    expect(await docketVerify(jobId)).toEqual({ code: 0, stdout: `intact: ${jobId}, 4 events, head ${kept.hash}\n`, stderr: '' });
  });
});
