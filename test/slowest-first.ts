import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { SLOWEST_FILES } from './tiers.js';

/**
 * Starts the files known to take longest first ({@link SLOWEST_FILES}, in
 * that order), then the rest in vitest's own order (its cache of earlier
 * durations when there is one, file size on a fresh clone). Three files run
 * at once; a long file started last would run alone at the end of its tier.
 */
export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification): number => {
      const index = SLOWEST_FILES.indexOf(relative(this.ctx.config.root, file.moduleId));
      return index < 0 ? SLOWEST_FILES.length : index;
    };
    return sorted.map((file, order) => ({ file, order })).sort((a, b) => rank(a.file) - rank(b.file) || a.order - b.order).map(({ file }) => file);
  }
}
