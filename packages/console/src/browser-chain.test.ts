import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { sealedJournal } from '../../../test/support/sealed-journal.js';
import { BrowserChain, subtleSha256Hex } from './browser-chain.js';

/*
 * The console's chain check: SubtleCrypto (here Node's WebCrypto, the same
 * API a browser has) over the services' own preimage definition accepts a
 * journal the services sealed, and names the first sequence of any damage.
 */

const JOB = 'job_consolechaincheck0000000';
const DIGEST = createHash('sha256').update('a console submission').digest('hex');

function journal(count: number): Event[] {
  return sealedJournal(JOB, DIGEST, count, (step) => ({ step, note: 'ünïcødé ✓ 😀', nested: { list: [1, 2.5, 'x'] } }));
}

async function verify(events: readonly Event[], requestDigest = DIGEST): Promise<BrowserChain['state']> {
  const chain = new BrowserChain(JOB, requestDigest);
  for (const event of events) await chain.accept(event);
  return chain.state;
}

describe('BrowserChain', () => {
  it('verifies a journal the services sealed, up to its last sequence', async () => {
    expect(await verify(journal(6))).toEqual({ kind: 'verified', sequence: 6n });
  });

  it('names the first damaged sequence, and trusts nothing after it', async () => {
    const events = journal(6);
    const edited = events.map((event, index) => (index === 2 ? { ...event, payload: { ...event.payload, step: 99 } } : event));
    expect(await verify(edited)).toMatchObject({ kind: 'broken', sequence: 3n, why: 'its hash does not recompute' });
    expect(await verify([events[0]!, events[2]!, events[1]!])).toMatchObject({ kind: 'broken', sequence: 2n });
    expect(await verify([events[0]!, ...events.slice(2)])).toMatchObject({ kind: 'broken', sequence: 2n });
    expect(await verify(events.map((event, index) => (index === 4 ? { ...event, jobId: 'job_someoneelse0000000000' } : event)))).toMatchObject({
      kind: 'broken',
      sequence: 5n,
    });
    const relinked = events.map((event, index) => (index === 3 ? { ...event, previousHash: 'f'.repeat(64) } : event));
    expect(await verify(relinked)).toMatchObject({ kind: 'broken', sequence: 4n, why: 'its previous hash is not the hash before it' });
    expect(await verify(events, createHash('sha256').update('another submission').digest('hex'))).toMatchObject({ kind: 'broken', sequence: 1n });
  });

  it('hashes with SubtleCrypto exactly as SHA-256', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2_000 }), async (bytes) => (await subtleSha256Hex(bytes)) === createHash('sha256').update(bytes).digest('hex')),
      { numRuns: 200 },
    );
  });
});
