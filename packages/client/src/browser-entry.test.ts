import { createHash, webcrypto } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { runInNewContext } from 'node:vm';
import { build } from 'esbuild';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH } from '@docket/contracts';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { portableSha256Hex } from '../../contracts/src/sha256-portable.js';
import { sealedJournal } from '../../../test/support/sealed-journal.js';

/*
 * `@docket/client` works in browsers: its `browser` entry bundles for the
 * browser platform with nothing of Node in it (esbuild refuses `node:`
 * modules there), runs where there is no `process` and no `Buffer`, and
 * verifies a job's hash chain there with the portable SHA-256, which gives
 * the digests Node's crypto gives.
 */

const ENTRY = fileURLToPath(new URL('./browser.ts', import.meta.url));

/** The browser entry bundled as a browser would load it, evaluated in a realm with only what browsers have. */
async function loadInBrowserRealm(): Promise<Record<string, unknown>> {
  const bundle = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'browser',
    conditions: ['browser'],
    format: 'iife',
    globalName: 'docketClient',
    write: false,
    logLevel: 'silent',
  });
  const realm: Record<string, unknown> = {
    TextEncoder,
    TextDecoder,
    URL,
    Headers,
    AbortController,
    AbortSignal,
    crypto: webcrypto,
    setTimeout,
    clearTimeout,
    queueMicrotask,
    console,
  };
  runInNewContext(bundle.outputFiles[0]!.text, realm);
  expect(realm['process']).toBeUndefined();
  expect(realm['Buffer']).toBeUndefined();
  return { ...(realm['docketClient'] as Record<string, unknown>), inRealm: (code: string, input: string) => runInNewContext(`(${code})(input)`, Object.assign(realm, { input })) };
}

/**
 * `events` as objects of the browser realm: a browser's own objects come
 * from its one realm, and the canonical JSON checks (rightly) refuse
 * objects of another realm as not plain.
 */
function eventsInRealm(inRealm: (code: string, input: string) => unknown, events: readonly Event[]): Event[] {
  const json = JSON.stringify(events, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value));
  return inRealm(
    `(text) => JSON.parse(text, (_key, value) => (typeof value === 'string' && /^-?\\d+n$/.test(value) ? BigInt(value.slice(0, -1)) : value))`,
    json,
  ) as Event[];
}

/** A real chain of `count` events of one job, sealed by the same code the services use. */
function journal(count: number): { jobId: string; requestDigest: string; events: Event[] } {
  const jobId = 'job_browserchaincheck00000000';
  const requestDigest = createHash('sha256').update('a submission').digest('hex');
  return { jobId, requestDigest, events: sealedJournal(jobId, requestDigest, count) };
}

describe('the browser entry of @docket/client', () => {
  it('bundles for browsers without Node, and verifies a hash chain where there is no process or Buffer', async () => {
    const client = await loadInBrowserRealm();
    expect(typeof client['createClient']).toBe('function');
    expect(client['createNodeTransports']).toBeUndefined();
    expect(String((client['newIdempotencyKey'] as () => string)())).toMatch(/^[A-Za-z0-9._~-]{16,128}$/);

    const JournalChain = client['JournalChain'] as new (anchor: unknown) => { accept(events: readonly Event[]): void; readonly lastSequence: bigint };
    const inRealm = client['inRealm'] as (code: string, input: string) => unknown;
    const { jobId, requestDigest, events: outside } = journal(5);
    const events = eventsInRealm(inRealm, outside);
    const chain = new JournalChain({ jobId, requestDigest, previousHash: GENESIS_HASH, previousSequence: 0n });
    expect(() => chain.accept(events)).not.toThrow();
    expect(chain.lastSequence).toBe(5n);

    const tampered = eventsInRealm(
      inRealm,
      outside.map((event, index) => (index === 2 ? { ...event, payload: { ...event.payload, step: 99 } } : event)),
    );
    const fresh = new JournalChain({ jobId, requestDigest, previousHash: GENESIS_HASH, previousSequence: 0n });
    expect(() => fresh.accept(tampered)).toThrow(expect.objectContaining({ reason: 'JOURNAL_CORRUPT' }));
  });

  it('has a portable SHA-256 that matches Node on every input', () => {
    const vectors: [string, string][] = [
      ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
      ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
      ['abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1'],
    ];
    for (const [text, digest] of vectors) expect(portableSha256Hex(new TextEncoder().encode(text))).toBe(digest);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 1_000 }), (bytes) => portableSha256Hex(bytes) === createHash('sha256').update(bytes).digest('hex')),
      { numRuns: 500 },
    );
  });
});
