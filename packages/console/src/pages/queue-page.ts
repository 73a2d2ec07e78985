import { durationMs } from '@bufbuild/protobuf/wkt';
import { isValidQueueName } from '@docket/contracts';
import { BulkAction, BulkOperationState, WorkerState, type GetQueueStatsResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { newIdempotencyKey } from '@docket/client';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { el, replaceChildren } from '../dom.js';
import { STATUS_CHOICES, formatAge, formatTime, statusName } from '../job-facts.js';
import { countOf, queueSeries } from '../queue-series.js';
import { jobHref, queueHref } from '../route.js';
import { showListingTable } from './listing-table.js';
import type { PageContext } from './page-context.js';
import { refusalView } from './refusal-view.js';
import { repeatWhileShown } from './reread.js';

/** How often a queue page reads its statistics again. */
const REREAD_MS = 5_000;

/**
 * The queues view (admin tokens): for each queue a live worker serves
 * (ListWorkers) and each queue named in the field, its figures from
 * GetQueueStats, which the service keeps as counters: jobs by status,
 * running attempts, the oldest queued job's wait, and the last hour's
 * admissions, claims and median pickup latency. Each queue links to its
 * charts. Nothing is counted in the browser; a user token is refused by
 * the service, and the page says so.
 */
export function showQueues(context: PageContext): void {
  const { client, main, signal } = context;
  const name = el('input', { id: 'queue-name', name: 'queue', type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const open = (event: Event): void => {
    event.preventDefault();
    const queue = name.value.trim();
    if (isValidQueueName(queue)) location.hash = queueHref(queue);
    else replaceChildren(table.problems, el('p', { role: 'alert', class: 'refusal' }, 'A queue name matches ^[a-z0-9][a-z0-9._-]{0,127}$'));
  };
  const table = showListingTable(main, {
    id: 'queue',
    title: 'Queues',
    help: 'From GetQueueStats, which the service keeps as counters (admin tokens only): every queue a registered worker serves; open any other by name.',
    controls: el('form', { class: 'inline-fields', onsubmit: open }, el('span', { class: 'field' }, el('label', { for: 'queue-name' }, 'Queue name'), name), el('button', { type: 'submit', id: 'open-queue' }, 'Open')),
    columns: ['Queue', ...STATUS_CHOICES.map(statusName), 'Running attempts', 'Oldest queued', 'Admitted (1 h)', 'Claimed (1 h)', 'Pickup p50 (1 h)'],
  });

  async function read(): Promise<void> {
    try {
      const queues = new Set<string>();
      for await (const worker of client.listWorkers({ signal })) {
        if (worker.state !== WorkerState.LIVE) continue;
        for (const queue of worker.queues) queues.add(queue);
      }
      const rows = await Promise.all([...queues].sort().map(async (queue) => ({ queue, stats: await client.getQueueStats(queue, { signal }) })));
      replaceChildren(table.problems);
      table.show(
        rows.map(({ queue, stats }) => queueRow(queue, stats)),
        'queue',
        'No live worker serves a queue. Open one by name.',
      );
    } catch (error) {
      if (!signal.aborted) table.refused('Reading the queues', error);
    }
  }
  repeatWhileShown(signal, REREAD_MS, read);
}

function queueRow(queue: string, stats: GetQueueStatsResponse): HTMLTableRowElement {
  const sum = (pick: (bucket: GetQueueStatsResponse['buckets'][number]) => bigint) => stats.buckets.reduce((total, bucket) => total + pick(bucket), 0n);
  const p50s = stats.buckets.flatMap((bucket) => (bucket.pickupLatencyP50 ? [durationMs(bucket.pickupLatencyP50)] : []));
  return el(
    'tr',
    { 'data-queue': queue },
    el('th', { scope: 'row' }, el('a', { href: queueHref(queue) }, queue)),
    ...STATUS_CHOICES.map((status) => el('td', { 'data-status': statusName(status) }, String(countOf(stats, status)))),
    el('td', { 'data-fact': 'running-attempts' }, String(countOf(stats, JobStatus.RUNNING) + countOf(stats, JobStatus.CANCELLING))),
    el('td', { 'data-fact': 'oldest-queued' }, stats.oldestQueuedAge ? formatAge(durationMs(stats.oldestQueuedAge)) : '-'),
    el('td', { 'data-fact': 'admitted' }, String(sum((bucket) => bucket.admitted))),
    el('td', { 'data-fact': 'claimed' }, String(sum((bucket) => bucket.claimed))),
    el('td', { 'data-fact': 'pickup-p50' }, p50s.length === 0 ? '-' : `${Math.round(p50s.sort((a, b) => a - b)[Math.floor(p50s.length / 2)]!)} ms`),
  );
}

/**
 * One queue's page: its counts, and charts over the last hour, a bucket a
 * minute, of the queued depth (derived, see `queueSeries`), throughput
 * (admitted, claimed, succeeded, failed) and pickup latency (p50, p99),
 * read again every {@link REREAD_MS}. Each chart has its figures in a
 * table beside it for keyboards and screen readers.
 */
export function showQueue(context: PageContext, queue: string): void {
  const { client, main, signal } = context;
  const counts = el('dl', { id: 'queue-counts', class: 'facts' });
  const problems = el('div', { 'aria-live': 'assertive' });
  const note = el('p', { id: 'queue-note', class: 'help', role: 'status' }, 'Reading ...');
  const charts = { depth: el('div', { id: 'chart-depth', class: 'chart' }), throughput: el('div', { id: 'chart-throughput', class: 'chart' }), pickup: el('div', { id: 'chart-pickup', class: 'chart' }) };
  const figures = el('tbody', { id: 'bucket-rows' });
  const bulk = bulkActions(context, queue);
  replaceChildren(
    main,
    el('h1', {}, 'Queue ', el('code', {}, queue)),
    el('p', {}, el('a', { href: '#/queues' }, 'All queues')),
    note,
    problems,
    el('section', { class: 'card', 'aria-labelledby': 'counts-title' }, el('h2', { id: 'counts-title' }, 'Jobs by status'), counts),
    bulk.section,
    el('section', { class: 'card', 'aria-labelledby': 'depth-title' }, el('h2', { id: 'depth-title' }, 'Queued (last hour)'), charts.depth),
    el('section', { class: 'card', 'aria-labelledby': 'throughput-title' }, el('h2', { id: 'throughput-title' }, 'Throughput per minute'), charts.throughput),
    el('section', { class: 'card', 'aria-labelledby': 'pickup-title' }, el('h2', { id: 'pickup-title' }, 'Pickup latency (ms)'), charts.pickup),
    el(
      'details',
      { class: 'card' },
      el('summary', {}, 'Figures per minute'),
      el(
        'table',
        { id: 'bucket-table' },
        el('thead', {}, el('tr', {}, ...['Minute', 'Queued', 'Admitted', 'Claimed', 'Succeeded', 'Failed', 'Pickup p50 ms', 'Pickup p99 ms'].map((column) => el('th', { scope: 'col' }, column)))),
        figures,
      ),
    ),
  );
  const plots: uPlot[] = [];
  signal.addEventListener('abort', () => plots.forEach((plot) => plot.destroy()), { once: true });

  async function read(): Promise<void> {
    let stats: GetQueueStatsResponse;
    try {
      stats = await client.getQueueStats(queue, { signal });
    } catch (error) {
      if (signal.aborted) return;
      note.textContent = '';
      replaceChildren(problems, refusalView('Reading the queue', error));
      return;
    }
    replaceChildren(problems);
    const facts: [string, string][] = [
      ...STATUS_CHOICES.map((status): [string, string] => [statusName(status), String(countOf(stats, status))]),
      ['Oldest queued', stats.oldestQueuedAge ? formatAge(durationMs(stats.oldestQueuedAge)) : '-'],
    ];
    replaceChildren(counts, ...facts.flatMap(([label, value]) => [el('dt', {}, label), el('dd', { 'data-fact': label }, value)]));
    const series = queueSeries(stats);
    const data: uPlot.AlignedData[] = [
      [series.times, series.queued],
      [series.times, series.admitted, series.claimed, series.succeeded, series.failed],
      [series.times, series.pickupP50, series.pickupP99],
    ];
    if (plots.length === 0) {
      const width = Math.max(320, Math.min(1100, main.clientWidth - 48));
      const options = (title: string, names: string[], colours: string[]): uPlot.Options => ({
        title,
        width,
        height: 220,
        series: [{}, ...names.map((label, index) => ({ label, stroke: colours[index], width: 2, spanGaps: false }))],
        axes: [{}, { size: 60 }],
      });
      plots.push(
        new uPlot(options('Queued', ['queued'], ['#1f5fbf']), data[0]!, charts.depth),
        new uPlot(options('Per minute', ['admitted', 'claimed', 'succeeded', 'failed'], ['#1f5fbf', '#7a4fbf', '#1c7c3c', '#b3261e']), data[1]!, charts.throughput),
        new uPlot(options('Pickup latency', ['p50 ms', 'p99 ms'], ['#1c7c3c', '#b3261e']), data[2]!, charts.pickup),
      );
    } else {
      plots.forEach((plot, index) => plot.setData(data[index]!));
    }
    const cell = (value: number | null) => el('td', {}, value === null ? '-' : String(Math.round(value)));
    replaceChildren(
      figures,
      ...series.times.map((time, index) =>
        el(
          'tr',
          {},
          el('th', { scope: 'row' }, new Date(time * 1000).toLocaleTimeString()),
          cell(series.queued[index]!),
          cell(series.admitted[index]!),
          cell(series.claimed[index]!),
          cell(series.succeeded[index]!),
          cell(series.failed[index]!),
          cell(series.pickupP50[index]!),
          cell(series.pickupP99[index]!),
        ),
      ),
    );
    await bulk.refresh();
    note.textContent = `Read at ${new Date().toLocaleTimeString()}; again every ${REREAD_MS / 1000} s.`;
  }
  repeatWhileShown(signal, REREAD_MS, read);
}

/** How many of the newest failed jobs the queue page lists. */
const FAILED_SHOWN = 20;
/** How often a running bulk operation's progress is read. */
const PROGRESS_MS = 1_000;

/**
 * The queue page's failed jobs (the newest {@link FAILED_SHOWN}, linked)
 * and its bulk actions: "Retry all failed" starts RetryJobs over the
 * queue's FAILED jobs and "Cancel all queued" CancelJobs over its QUEUED
 * ones, each a durable bulk operation with a fresh idempotency key, whose
 * progress is shown until it completes.
 */
function bulkActions(context: PageContext, queue: string): { section: HTMLElement; refresh: () => Promise<void> } {
  const { client, signal } = context;
  const failed = el('tbody', { id: 'failed-rows' });
  const progress = el('p', { id: 'bulk-progress', role: 'status' });
  const problems = el('div', { 'aria-live': 'assertive' });
  const follow = async (operationId: string): Promise<void> => {
    for (;;) {
      const operation = await client.getBulkOperation(operationId, { signal });
      progress.dataset['state'] = BulkOperationState[operation.state];
      progress.textContent =
        `${operation.action === BulkAction.RETRY ? 'Retry' : 'Cancel'} ${operation.id}: ${BulkOperationState[operation.state]}, ` +
        `${operation.done} of ${operation.matched} done (changed ${operation.changed}, skipped ${operation.skipped}, failed ${operation.failed})`;
      if (operation.state === BulkOperationState.COMPLETED || signal.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, PROGRESS_MS));
    }
  };
  const start = (action: 'retry' | 'cancel') => async (): Promise<void> => {
    replaceChildren(problems);
    try {
      const receipt =
        action === 'retry'
          ? await client.retryJobs({ queue, statuses: [JobStatus.FAILED] }, { idempotencyKey: newIdempotencyKey() })
          : await client.cancelJobs({ queue, statuses: [JobStatus.QUEUED] }, { idempotencyKey: newIdempotencyKey() });
      await follow(receipt.operation.id);
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView(action === 'retry' ? 'Retry all failed' : 'Cancel all queued', error));
    }
  };
  const section = el(
    'section',
    { class: 'card', 'aria-labelledby': 'failed-title' },
    el('h2', { id: 'failed-title' }, 'Failed jobs'),
    el(
      'div',
      { class: 'actions' },
      el('button', { type: 'button', id: 'retry-all-failed', onclick: () => void start('retry')() }, 'Retry all failed'),
      el('button', { type: 'button', id: 'cancel-all-queued', onclick: () => void start('cancel')() }, 'Cancel all queued'),
    ),
    el('p', { class: 'help' }, 'Each starts a durable bulk operation over the jobs that match now (RetryJobs, CancelJobs); the service works through them even if this page is closed.'),
    progress,
    problems,
    el('table', { id: 'failed-table' }, el('thead', {}, el('tr', {}, ...['Job', 'Failure', 'Updated'].map((column) => el('th', { scope: 'col' }, column)))), failed),
  );
  const refresh = async (): Promise<void> => {
    const rows: HTMLTableRowElement[] = [];
    try {
      for await (const job of client.list({ queue, statuses: [JobStatus.FAILED], pageSize: FAILED_SHOWN, signal })) {
        rows.push(
          el(
            'tr',
            { 'data-job': job.id },
            el('th', { scope: 'row' }, el('a', { href: jobHref(job.id) }, job.id)),
            el('td', {}, job.failure ? `${FailureClass[job.failure.failureClass] ?? 'UNSPECIFIED'}: ${job.failure.message}` : '-'),
            el('td', {}, formatTime(job.updatedAt)),
          ),
        );
        if (rows.length >= FAILED_SHOWN) break;
      }
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView('Listing failed jobs', error));
      return;
    }
    replaceChildren(failed, ...rows);
    if (rows.length === 0) replaceChildren(failed, el('tr', {}, el('td', { colspan: 3 }, 'No failed jobs.')));
  };
  return { section, refresh };
}
