import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WatermarkSnapshot } from './acknowledged-watermark.js';
import { WatermarkWriter, parseWatermark, readWatermarkFile, writeWatermarkFile } from './watermark-file.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docket-watermark-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SNAPSHOT: WatermarkSnapshot = {
  version: 1,
  systemIdentifier: '7312345678901234567',
  timeline: 2,
  acknowledgedLsn: '0/5000060',
  unconfirmedLsn: '0/5000000',
  standbyFlushLsn: null,
  window: [{ lsn: '0/5000000', jobIds: ['job_a'] }],
  windowTruncatedAt: null,
};

describe('the watermark file', () => {
  it('is absent on a first start, and reads back what was written', async () => {
    const path = join(dir, 'round-trip.json');
    expect(await readWatermarkFile(path)).toBeUndefined();
    await writeWatermarkFile(path, SNAPSHOT);
    expect(await readWatermarkFile(path)).toEqual(SNAPSHOT);
    await writeWatermarkFile(path, { ...SNAPSHOT, timeline: 3 });
    expect((await readWatermarkFile(path))?.timeline).toBe(3);
    // Written through a temporary file renamed over it: none is left behind.
    expect((await readdir(dir)).filter((name) => name.startsWith('round-trip'))).toEqual(['round-trip.json']);
  });

  it('refuses a file that is not a watermark, naming no path', async () => {
    const path = join(dir, 'broken.json');
    for (const text of ['', '{', 'null', '[]', JSON.stringify({ ...SNAPSHOT, version: 2 }), JSON.stringify({ ...SNAPSHOT, acknowledgedLsn: '5000060' }), JSON.stringify({ ...SNAPSHOT, timeline: 0 }), JSON.stringify({ ...SNAPSHOT, window: [{ lsn: '0/1', jobIds: [1] }] }), JSON.stringify({ ...SNAPSHOT, systemIdentifier: 'abc' })]) {
      await writeFile(path, text);
      await expect(readWatermarkFile(path)).rejects.toThrow(/^the watermark file is not valid$/);
    }
    expect(parseWatermark(JSON.stringify(SNAPSHOT))).toEqual(SNAPSHOT);
  });

  it('is saved at most once per interval while things change, and at once on flush', async () => {
    const path = join(dir, 'writer.json');
    let revision = 0;
    let timeline = 1;
    const errors: unknown[] = [];
    const writer = new WatermarkWriter(path, () => ({ snapshot: { ...SNAPSHOT, timeline }, revision }), (error) => errors.push(error), 200);
    writer.changed();
    revision += 1;
    writer.changed();
    expect(await readWatermarkFile(path)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await readWatermarkFile(path))?.timeline).toBe(1);
    timeline = 5;
    revision += 1;
    writer.changed();
    await writer.flush();
    expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ timeline: 5 });
    expect(errors).toEqual([]);
  });

  it('reports a save that fails, and keeps the old file', async () => {
    const errors: unknown[] = [];
    const writer = new WatermarkWriter(join(dir, 'no-such-dir', 'watermark.json'), () => ({ snapshot: SNAPSHOT, revision: 1 }), (error) => errors.push(error));
    await writer.flush();
    expect(errors).toHaveLength(1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe('ENOENT');
  });
});
