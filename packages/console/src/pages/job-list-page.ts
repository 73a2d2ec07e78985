import { JobStatus, type JobPage } from '@docket/client';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { JobChanged } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { el, replaceChildren } from '../dom.js';
import { STATUS_CHOICES, formatTime, statusName } from '../job-facts.js';
import { jobHref } from '../route.js';
import type { PageContext } from './page-context.js';
import { progressView, statusView } from './job-parts.js';
import { refusalView } from './refusal-view.js';

const PAGE_SIZES = [5, 10, 25, 50] as const;
const DEFAULT_PAGE_SIZE = 25;

/** The listing's filter, as the form holds it. */
interface ListFilter {
  readonly statuses: readonly JobStatus[];
  readonly queue: string;
  readonly pageSize: number;
}

/**
 * The job list: newest first, filtered by status and queue, paged by
 * ListJobs' keyset page tokens (Next keeps the snapshot the first page
 * fixed; Previous goes back to a token already seen). Rows change in
 * place as WatchJobs reports changes from the listing's own
 * `event_cursor`, so nothing between the read and the feed is missed;
 * jobs admitted later appear at the top of the first page. A
 * `resync_required` frame re-reads the page.
 */
export function showJobList(context: PageContext): void {
  const { client, main, signal } = context;
  let filter: ListFilter = { statuses: [], queue: '', pageSize: DEFAULT_PAGE_SIZE };
  /** Page tokens of the pages visited; the last is the current page's. */
  let tokens: string[] = [''];
  let watching: AbortController | undefined;
  const rows = new Map<string, { job: Job; row: HTMLTableRowElement }>();

  const statusBoxes = STATUS_CHOICES.map((status) =>
    el('input', { type: 'checkbox', name: 'status', value: statusName(status), id: `status-${statusName(status)}` }),
  );
  const queueInput = el('input', { id: 'filter-queue', name: 'queue', type: 'text', autocomplete: 'off', placeholder: 'any queue' });
  const sizeSelect = el(
    'select',
    { id: 'page-size', name: 'pageSize' },
    ...PAGE_SIZES.map((size) => el('option', { value: size, selected: size === DEFAULT_PAGE_SIZE }, String(size))),
  );
  const form = el(
    'form',
    { class: 'filters', 'aria-label': 'Filter jobs' },
    el(
      'fieldset',
      {},
      el('legend', {}, 'Status'),
      ...STATUS_CHOICES.map((status, index) =>
        el('span', { class: 'choice' }, statusBoxes[index], el('label', { for: `status-${statusName(status)}` }, statusName(status))),
      ),
    ),
    el('span', { class: 'field' }, el('label', { for: 'filter-queue' }, 'Queue'), queueInput),
    el('span', { class: 'field' }, el('label', { for: 'page-size' }, 'Rows per page'), sizeSelect),
    el('button', { type: 'submit' }, 'Apply'),
  );
  const live = el('p', { id: 'list-live', class: 'help', role: 'status' }, 'Loading ...');
  const body = el('tbody', { id: 'job-rows' });
  const table = el(
    'table',
    { id: 'job-table' },
    el('caption', { class: 'visually-hidden' }, 'Jobs, newest first'),
    el(
      'thead',
      {},
      el('tr', {}, ...['Job', 'Queue', 'Label', 'Status', 'Progress', 'Attempts', 'Created'].map((name) => el('th', { scope: 'col' }, name))),
    ),
    body,
  );
  const previous = el('button', { type: 'button', id: 'previous-page' }, 'Previous page');
  const next = el('button', { type: 'button', id: 'next-page' }, 'Next page');
  const pageLabel = el('span', { id: 'page-number' });
  const problems = el('div', { 'aria-live': 'assertive' });
  replaceChildren(main, el('h1', {}, 'Jobs'), form, live, problems, table, el('nav', { class: 'pager', 'aria-label': 'Pages' }, previous, pageLabel, next));

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    filter = {
      statuses: statusBoxes.filter((box) => box.checked).map((box) => JobStatus[box.value as keyof typeof JobStatus]),
      queue: queueInput.value.trim(),
      pageSize: Number(sizeSelect.value),
    };
    tokens = [''];
    void load(true);
  });
  next.addEventListener('click', () => {
    const token = next.dataset['token'];
    if (token === undefined || token === '') return;
    tokens.push(token);
    void load(false);
  });
  previous.addEventListener('click', () => {
    if (tokens.length < 2) return;
    tokens.pop();
    void load(false);
  });

  async function load(restartFeed: boolean): Promise<void> {
    let page: JobPage;
    try {
      page = await client.listPage({ ...filter, pageToken: tokens.at(-1) ?? '', signal });
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView('Listing', error));
      return;
    }
    replaceChildren(problems);
    rows.clear();
    replaceChildren(body, ...page.jobs.map((job) => rowOf(job)));
    if (page.jobs.length === 0) replaceChildren(body, el('tr', {}, el('td', { colspan: 7 }, 'No jobs match.')));
    next.dataset['token'] = page.nextPageToken;
    next.disabled = page.nextPageToken === '';
    previous.disabled = tokens.length < 2;
    pageLabel.textContent = `Page ${tokens.length}`;
    if (restartFeed || watching === undefined) follow(page.eventCursor);
  }

  function rowOf(job: Job): HTMLTableRowElement {
    const row = el('tr', { 'data-job-id': job.id });
    rows.set(job.id, { job, row });
    fillRow(row, job);
    return row;
  }

  function fillRow(row: HTMLTableRowElement, job: Job): void {
    row.dataset['status'] = statusName(job.status);
    replaceChildren(
      row,
      el('td', {}, el('a', { href: jobHref(job.id) }, job.id)),
      el('td', {}, job.queue),
      el('td', {}, job.label),
      el('td', {}, statusView(job.status)),
      el('td', {}, progressView(job.progress, `Progress of ${job.id}`)),
      el('td', {}, `${job.attemptCount}/${job.maxAttempts}`),
      el('td', {}, formatTime(job.createdAt)),
    );
  }

  /** Follows the change feed from `cursor` until the page is left or the filter changes. */
  function follow(cursor: string): void {
    watching?.abort();
    const controller = new AbortController();
    watching = controller;
    const feedSignal = AbortSignal.any([signal, controller.signal]);
    live.textContent = 'Live: rows change as jobs do.';
    void (async () => {
      try {
        for await (const frame of client.watchJobs({ cursor, filter: { queue: filter.queue }, signal: feedSignal })) {
          if (frame.kind === 'job_changed') await applyChange(frame.change);
          else if (frame.kind === 'resync_required') {
            live.textContent = 'Live: the change feed asked for a re-read; the page was read again.';
            await load(false);
          }
        }
      } catch (error) {
        if (feedSignal.aborted) return;
        live.textContent = 'Live updates stopped.';
        replaceChildren(problems, refusalView('Live updates', error));
      }
    })();
  }

  async function applyChange(change: JobChanged): Promise<void> {
    const shown = rows.get(change.jobId);
    if (shown !== undefined) {
      if (change.revision <= shown.job.revision) return;
      shown.job = { ...shown.job, revision: change.revision, status: change.status, lifecycle: change.lifecycle, progress: change.progress ?? shown.job.progress };
      fillRow(shown.row, shown.job);
      return;
    }
    if (tokens.length !== 1) return;
    if (filter.statuses.length > 0 && !filter.statuses.includes(change.status)) return;
    try {
      const job = await client.get(change.jobId, { signal });
      if (rows.has(job.id)) return;
      if (body.querySelector('td[colspan]')) replaceChildren(body);
      body.prepend(rowOf(job));
    } catch {
      // Gone or hidden since the change: nothing to show.
    }
  }

  void load(true);
}
