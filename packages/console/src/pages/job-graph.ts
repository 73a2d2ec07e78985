import { OnParentFailure, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { el, replaceChildren } from '../dom.js';
import type { PageContext } from './page-context.js';
import { statusView } from './job-parts.js';
import { refusalView } from './refusal-view.js';

/** Children shown on a job page (the first page of ListJobs by parent, newest first). */
const CHILDREN_SHOWN = 50;

/**
 * A job page's parents and children (SPEC section 14): the parents it
 * waits for (`parent_job_ids`, with how many are still pending and what a
 * failed parent does to it) and the jobs that wait for it, read with
 * ListJobs by `parent_job_id` whenever the job changed. Hidden for a job
 * with neither.
 */
export class JobGraphView {
  readonly element = el('section', { id: 'job-graph', class: 'card', 'aria-labelledby': 'graph-title', hidden: true });
  readonly #context: PageContext;
  /** The revision the children were last read at. */
  #readAt: bigint | undefined;

  constructor(context: PageContext) {
    this.#context = context;
  }

  render(job: Job): void {
    this.element.hidden = job.parentCount === 0 && job.childCount === 0;
    if (this.element.hidden || this.#readAt === job.revision) return;
    this.#readAt = job.revision;
    const children = el('ul', { id: 'job-children' });
    replaceChildren(
      this.element,
      el('h2', { id: 'graph-title' }, 'Parents and children'),
      job.parentCount === 0
        ? ''
        : el(
            'p',
            { id: 'job-parents-summary' },
            `Waits for ${job.parentCount} parent${job.parentCount === 1 ? '' : 's'}, ${job.pendingParentCount} not settled yet; a failed parent `,
            job.onParentFailure === OnParentFailure.RUN ? 'counts as settled (it runs anyway).' : 'cancels it (DEPENDENCY_FAILED).',
          ),
      job.parentCount === 0 ? '' : el('ul', { id: 'job-parents' }, ...job.parentJobIds.map((id) => el('li', { 'data-job': id }, el('a', { href: `#/jobs/${id}` }, el('code', {}, id))))),
      job.childCount === 0 ? '' : el('p', { id: 'job-children-summary' }, `${job.childCount} job${job.childCount === 1 ? '' : 's'} wait${job.childCount === 1 ? 's' : ''} for it.`),
      job.childCount === 0 ? '' : children,
    );
    if (job.childCount > 0) void this.#readChildren(job, children);
  }

  async #readChildren(job: Job, into: HTMLElement): Promise<void> {
    const { client, signal } = this.#context;
    try {
      const page = await client.listPage({ parentJobId: job.id, pageSize: CHILDREN_SHOWN, signal });
      replaceChildren(
        into,
        ...page.jobs.map((child) => el('li', { 'data-job': child.id }, el('a', { href: `#/jobs/${child.id}` }, el('code', {}, child.id)), ' ', statusView(child.status))),
        job.childCount > page.jobs.length ? el('li', {}, `and ${job.childCount - page.jobs.length} more (docket list --parent ${job.id})`) : '',
      );
    } catch (error) {
      if (!signal.aborted) replaceChildren(into, el('li', {}, refusalView('Reading the children', error)));
    }
  }
}
