import type { JobStatus } from '@docket/client';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import { el } from '../dom.js';
import { progressFraction, progressText, statusName } from '../job-facts.js';

/** A status as a labelled badge (its colour only repeats what the text says). */
export function statusView(status: JobStatus): HTMLElement {
  const name = statusName(status);
  return el('span', { class: `status status-${name.toLowerCase()}`, 'data-status': name }, name);
}

/** A progress bar with its numbers beside it; `label` names it for assistive technology. */
export function progressView(progress: Progress | undefined, label: string): HTMLElement {
  const fraction = progressFraction(progress);
  if (progress === undefined || fraction === undefined) {
    // No bar without a total: an indeterminate bar would animate forever.
    return el('span', { class: 'progress' }, el('span', { class: 'progress-text' }, progressText(progress)));
  }
  const bar = el('progress', { max: 1, value: fraction, 'aria-label': label, 'data-completed': String(progress.completedUnits), 'data-total': String(progress.totalUnits) });
  return el('span', { class: 'progress' }, bar, el('span', { class: 'progress-text' }, progressText(progress)));
}
