import { timestampDate } from '@bufbuild/protobuf/wkt';
import { WorkerState } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { el, replaceChildren } from '../dom.js';
import { formatAge } from '../job-facts.js';
import { queueHref } from '../route.js';
import { showListingTable } from './listing-table.js';
import type { PageContext } from './page-context.js';
import { repeatWhileShown } from './reread.js';

/** How often the page reads the workers again. */
const REREAD_MS = 5_000;

/**
 * The workers view (admin tokens): every registration of every worker name
 * from ListWorkers, newest first: LIVE, EXPIRED or SUPERSEDED, its queues
 * (each a link to its queue), the attempts it holds of its capacity, and
 * when it registered and was last seen. Read again every {@link REREAD_MS}.
 */
export function showWorkers(context: PageContext): void {
  const { client, main, signal } = context;
  const table = showListingTable(main, {
    id: 'worker',
    title: 'Workers',
    help: 'Every registration (ListWorkers, admin tokens only): LIVE if seen within a lease, EXPIRED after, SUPERSEDED once its name registered again.',
    columns: ['Worker', 'State', 'Generation', 'Running', 'Queues', 'Registered', 'Last seen', 'Incarnation'],
  });
  repeatWhileShown(signal, REREAD_MS, async () => {
    try {
      const rows: HTMLTableRowElement[] = [];
      const now = Date.now();
      for await (const worker of client.listWorkers({ signal })) {
        const state = WorkerState[worker.state] ?? 'UNSPECIFIED';
        const ago = (at: typeof worker.lastSeenAt) => (at ? `${formatAge(Math.max(0, now - timestampDate(at).getTime()))} ago` : '-');
        rows.push(
          el(
            'tr',
            { 'data-worker': worker.workerIncarnation, 'data-state': state },
            el('th', { scope: 'row' }, worker.workerName),
            el('td', { 'data-fact': 'state' }, state),
            el('td', {}, String(worker.generation)),
            el('td', { 'data-fact': 'running' }, `${worker.runningAttempts} of ${worker.maxConcurrency}`),
            el('td', {}, ...worker.queues.flatMap((queue, index) => [index === 0 ? '' : ', ', el('a', { href: queueHref(queue) }, queue)])),
            el('td', {}, ago(worker.registeredAt)),
            el('td', { 'data-fact': 'last-seen' }, ago(worker.lastSeenAt)),
            el('td', {}, el('code', {}, worker.workerIncarnation)),
          ),
        );
      }
      replaceChildren(table.problems);
      table.show(rows, 'registration', 'No worker has registered.', new Date(now));
    } catch (error) {
      if (!signal.aborted) table.refused('Reading the workers', error);
    }
  });
}
