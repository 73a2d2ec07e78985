import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { el, replaceChildren } from '../dom.js';
import { STATUS_CHOICES, formatAge, statusName } from '../job-facts.js';
import { summariseQueues } from '../queue-summary.js';
import type { PageContext } from './page-context.js';
import { refusalView } from './refusal-view.js';

/** At most this many of the newest jobs are read to derive the queues (ListJobs pages of 200). */
const MAX_JOBS_READ = 2_000;

/** After a change on the feed, wait this long before reading again (changes come in bursts). */
const REREAD_DELAY_MS = 1_000;

/**
 * The queue view: depth by status, running attempts and the age of the
 * oldest queued job per queue. GetQueue is for admins only, so for anyone
 * it is derived from ListJobs of what the caller may see (a user's own
 * jobs, an admin's all), at most the newest {@link MAX_JOBS_READ}, and read
 * again when WatchJobs reports changes.
 */
export function showQueues(context: PageContext): void {
  const { client, main, signal } = context;
  const body = el('tbody', { id: 'queue-rows' });
  const note = el('p', { id: 'queue-note', class: 'help', role: 'status' }, 'Reading ...');
  const problems = el('div', { 'aria-live': 'assertive' });
  const refresh = el('button', { type: 'button', id: 'refresh-queues', onclick: () => void read() }, 'Read again');
  const columns = [...STATUS_CHOICES.map(statusName), 'Running attempts', 'Oldest queued'];
  replaceChildren(
    main,
    el('h1', {}, 'Queues'),
    el('p', { class: 'help' }, 'Derived in the browser from the job listing of what you may see (GetQueue is for admins); it follows the change feed.'),
    refresh,
    note,
    problems,
    el(
      'table',
      { id: 'queue-table' },
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Queue'), ...columns.map((name) => el('th', { scope: 'col' }, name)))),
      body,
    ),
  );

  let timer: ReturnType<typeof setTimeout> | undefined;
  async function read(): Promise<void> {
    const jobs: Job[] = [];
    let truncated = false;
    try {
      for await (const job of client.list({ pageSize: 200, signal })) {
        if (jobs.length >= MAX_JOBS_READ) {
          truncated = true;
          break;
        }
        jobs.push(job);
      }
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView('Listing', error));
      return;
    }
    replaceChildren(problems);
    const now = Date.now();
    const summaries = summariseQueues(jobs, now);
    replaceChildren(
      body,
      ...summaries.map((queue) =>
        el(
          'tr',
          { 'data-queue': queue.queue },
          el('th', { scope: 'row' }, queue.queue),
          ...STATUS_CHOICES.map((status) => el('td', { 'data-status': statusName(status) }, String(queue.byStatus.get(status) ?? 0))),
          el('td', { 'data-fact': 'running-attempts' }, String(queue.runningAttempts)),
          el('td', { 'data-fact': 'oldest-queued' }, queue.oldestQueuedAgeMs === undefined ? '-' : formatAge(queue.oldestQueuedAgeMs)),
        ),
      ),
    );
    if (summaries.length === 0) replaceChildren(body, el('tr', {}, el('td', { colspan: columns.length + 1 }, 'No jobs yet.')));
    note.textContent = `From ${jobs.length} job${jobs.length === 1 ? '' : 's'}${truncated ? ` (the newest ${MAX_JOBS_READ} only)` : ''}, read at ${new Date(now).toLocaleTimeString()}.`;
  }

  void (async () => {
    await read();
    try {
      for await (const frame of client.watchJobs({ signal })) {
        if (frame.kind !== 'heartbeat') {
          clearTimeout(timer);
          timer = setTimeout(() => void read(), REREAD_DELAY_MS);
        }
      }
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView('Live updates', error));
    }
  })();
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
}
