import { describe, expect, it } from 'vitest';
import { levelsOfParents, wavesByKey } from './submit-jobs.js';

const entry = (index: number, key: string, dependsOnItems: number[] = []) => ({ index, item: { idempotencyKey: key, dependsOnItems } });

describe('levelsOfParents', () => {
  it('puts every item after the items it names, and keeps independent items together', () => {
    const items = [entry(0, 'a'), entry(1, 'b', [0]), entry(2, 'c'), entry(3, 'd', [0, 1]), entry(4, 'e', [2])];
    expect(levelsOfParents(items).map((level) => level.map((item) => item.index))).toEqual([[0, 2], [1, 4], [3]]);
  });

  it('never puts an item before an earlier item with its key, so the later one still replays or conflicts', () => {
    const items = [entry(0, 'a'), entry(1, 'child', [0]), entry(2, 'child')];
    expect(levelsOfParents(items).map((level) => level.map((item) => item.index))).toEqual([[0], [1, 2]]);
  });

  it('gives an item naming a refused item (not among those levelled) the first level: its parent is then found failed', () => {
    expect(levelsOfParents([entry(1, 'b', [0])]).map((level) => level.map((item) => item.index))).toEqual([[1]]);
  });
});

describe('wavesByKey', () => {
  it('holds at most one item per key in each wave, in index order', () => {
    const items = ['a', 'b', 'a', 'a', 'c'].map((key, index) => ({ index, admission: { idempotencyKey: key } }));
    expect(wavesByKey(items).map((wave) => wave.map((item) => item.index))).toEqual([[0, 1, 4], [2], [3]]);
  });
});
