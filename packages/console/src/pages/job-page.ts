import type { JsonObject } from '@bufbuild/protobuf';
import { isDocketClientError, isTerminalStatus, newIdempotencyKey, isValidIdempotencyKey, type DocketClient, type MutationReceipt } from '@docket/client';
import { ExplainCode, type ExplainReason } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobLifecycle } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import { BrowserChain, type ChainState } from '../browser-chain.js';
import { el, replaceChildren } from '../dom.js';
import { attemptsOf, formatTime, statusName } from '../job-facts.js';
import { describeRefusal } from '../refusal-text.js';
import { looksLikeJobId } from '../route.js';
import { parseJsonObject } from '../json-input.js';
import type { PageContext } from './page-context.js';
import { progressView, statusView } from './job-parts.js';
import { JobGraphView } from './job-graph.js';
import { refusalView } from './refusal-view.js';

/** How long after a journal event the job is read again (events come in bursts). */
const REFRESH_DELAY_MS = 100;

/** An action of the job page: its button, and the client call it makes with the key shown. */
interface JobAction {
  readonly id: string;
  readonly label: string;
  readonly run: (client: DocketClient, job: Job, key: string) => Promise<MutationReceipt>;
}

/**
 * The job page: status, progress, attempts with their fences, input,
 * result or failure, the journal streaming live from StreamJobEvents (via
 * `client.watch`, which resumes after disconnects), the chain badge
 * (every event re-hashed in this browser with SubtleCrypto), and the
 * actions, each sent with the idempotency key shown. A job that does not
 * exist and a job of another subject look the same: "not found".
 */
export function showJobPage(context: PageContext, jobId: string): void {
  const { client, main, signal } = context;
  replaceChildren(main, el('h1', {}, 'Job ', el('code', {}, jobId)), el('p', { role: 'status' }, 'Loading ...'));
  if (!looksLikeJobId(jobId)) {
    showNotFound(main, jobId);
    return;
  }
  void client
    .explain(jobId, { signal })
    .then(({ job, reasons }) => new JobView(context, job, reasons).start())
    .catch((error: unknown) => {
      if (signal.aborted) return;
      if (isDocketClientError(error) && describeRefusal(error).reason === 'NOT_FOUND') showNotFound(main, jobId);
      else replaceChildren(main, el('h1', {}, 'Job ', el('code', {}, jobId)), refusalView('Reading the job', error));
    });
}

function showNotFound(main: HTMLElement, jobId: string): void {
  replaceChildren(
    main,
    el('h1', { id: 'not-found' }, 'Job not found'),
    el('p', {}, 'There is no job ', el('code', {}, jobId), ' that you can see.'),
    el('p', {}, el('a', { href: '#/jobs' }, 'Back to the job list')),
  );
}

class JobView {
  readonly #context: PageContext;
  #job: Job;
  /** Why the job is where it is (ExplainJob), read with it. */
  #reasons: readonly ExplainReason[];
  readonly #events: Event[] = [];
  #chain: BrowserChain | undefined;
  /** The chain checks run one after another, in sequence order. */
  #verifying: Promise<unknown> = Promise.resolve();
  #refreshTimer: ReturnType<typeof setTimeout> | undefined;
  #streaming = false;

  readonly #summary = el('dl', { id: 'job-summary', class: 'facts' });
  readonly #progress = el('div', { id: 'job-progress' });
  readonly #why = el('section', { id: 'job-why', class: 'card', 'aria-labelledby': 'why-title' });
  readonly #graph: JobGraphView;
  readonly #badge = el('p', { id: 'chain-badge', class: 'badge', role: 'status' }, 'Chain: not checked yet');
  readonly #timeline = el('ol', { id: 'timeline', class: 'timeline', 'aria-label': 'Journal events, oldest first' });
  readonly #attempts = el('tbody', { id: 'attempt-rows' });
  readonly #input = el('pre', { id: 'job-input' });
  readonly #outcome = el('div', { id: 'job-outcome' });
  readonly #streamState = el('p', { id: 'stream-state', class: 'help', role: 'status' });
  readonly #actionKey = el('input', { id: 'action-key', name: 'actionKey', type: 'text', autocomplete: 'off', spellcheck: 'false', size: 40 });
  readonly #actionResult = el('div', { id: 'action-result', 'aria-live': 'polite' });
  readonly #signalName = el('input', { id: 'signal-name', type: 'text', autocomplete: 'off', value: 'add' });
  readonly #signalPayload = el('textarea', { id: 'signal-payload', rows: 2, spellcheck: 'false' }, '{}');
  readonly #comment = el('input', { id: 'approval-comment', type: 'text', autocomplete: 'off' });

  constructor(context: PageContext, job: Job, reasons: readonly ExplainReason[]) {
    this.#context = context;
    this.#job = job;
    this.#reasons = reasons;
    this.#graph = new JobGraphView(context);
  }

  start(): void {
    this.#actionKey.value = newIdempotencyKey();
    const actions = this.#actions().map((action) =>
      el('button', { type: 'button', id: `action-${action.id}`, onclick: () => void this.#act(action) }, action.label),
    );
    replaceChildren(
      this.#context.main,
      el('h1', {}, 'Job ', el('code', { id: 'job-id' }, this.#job.id)),
      el('section', { 'aria-labelledby': 'state-title', class: 'card' }, el('h2', { id: 'state-title' }, 'State'), this.#summary, this.#progress, this.#badge),
      this.#why,
      this.#graph.element,
      el(
        'section',
        { 'aria-labelledby': 'actions-title', class: 'card' },
        el('h2', { id: 'actions-title' }, 'Actions'),
        el(
          'p',
          { class: 'field' },
          el('label', { for: 'action-key' }, 'Idempotency key of the next action'),
          this.#actionKey,
          el('button', { type: 'button', id: 'new-action-key', onclick: () => (this.#actionKey.value = newIdempotencyKey()) }, 'New key'),
        ),
        el('p', { class: 'help' }, 'Each action is sent with this key; repeating it with the same key replays the first answer. A new key is drawn after each success.'),
        el('div', { class: 'actions' }, ...actions),
        el(
          'div',
          { class: 'inline-fields' },
          el('span', { class: 'field' }, el('label', { for: 'signal-name' }, 'Signal name'), this.#signalName),
          el('span', { class: 'field' }, el('label', { for: 'signal-payload' }, 'Signal payload (JSON object)'), this.#signalPayload),
          el('span', { class: 'field' }, el('label', { for: 'approval-comment' }, 'Approval comment'), this.#comment),
        ),
        this.#actionResult,
      ),
      el('section', { 'aria-labelledby': 'attempts-title', class: 'card' }, el('h2', { id: 'attempts-title' }, 'Attempts'), this.#attemptsTable()),
      el('section', { 'aria-labelledby': 'input-title', class: 'card' }, el('h2', { id: 'input-title' }, 'Input'), this.#input),
      el('section', { 'aria-labelledby': 'outcome-title', class: 'card' }, el('h2', { id: 'outcome-title' }, 'Result or failure'), this.#outcome),
      el('section', { 'aria-labelledby': 'timeline-title', class: 'card' }, el('h2', { id: 'timeline-title' }, 'Events'), this.#streamState, this.#timeline),
    );
    this.#render();
    void this.#follow();
  }

  #actions(): JobAction[] {
    const payloadOf = (): JsonObject => {
      const parsed = parseJsonObject(this.#signalPayload.value);
      if (!parsed.ok) throw new SignalPayloadError(parsed.error);
      return parsed.value;
    };
    const approvalOf = (job: Job): string => job.pendingApproval?.approvalId ?? '';
    return [
      { id: 'cancel', label: 'Cancel', run: (c, job, key) => c.cancel(job.id, { idempotencyKey: key }) },
      { id: 'pause', label: 'Pause', run: (c, job, key) => c.pause(job.id, { idempotencyKey: key }) },
      { id: 'resume', label: 'Resume', run: (c, job, key) => c.resume(job.id, { idempotencyKey: key }) },
      { id: 'retry', label: 'Retry', run: (c, job, key) => c.retry(job.id, { idempotencyKey: key }) },
      { id: 'approve', label: 'Approve', run: (c, job, key) => c.decideApproval(job.id, approvalOf(job), 'ALLOW', { idempotencyKey: key, comment: this.#comment.value }) },
      { id: 'deny', label: 'Deny', run: (c, job, key) => c.decideApproval(job.id, approvalOf(job), 'DENY', { idempotencyKey: key, comment: this.#comment.value }) },
      { id: 'signal', label: 'Send signal', run: (c, job, key) => c.sendSignal(job.id, this.#signalName.value, payloadOf(), { idempotencyKey: key }) },
      { id: 'redeliver', label: 'Redeliver unknown signals', run: (c, job, key) => c.reconcileSignals(job.id, 'REDELIVER', { idempotencyKey: key }) },
      { id: 'discard', label: 'Discard unknown signals', run: (c, job, key) => c.reconcileSignals(job.id, 'DISCARD', { idempotencyKey: key }) },
      { id: 'delete', label: 'Delete', run: (c, job, key) => c.softDelete(job.id, { idempotencyKey: key }) },
      { id: 'restore', label: 'Restore', run: (c, job, key) => c.restore(job.id, { idempotencyKey: key }) },
    ];
  }

  async #act(action: JobAction): Promise<void> {
    const key = this.#actionKey.value.trim();
    if (!isValidIdempotencyKey(key)) {
      replaceChildren(this.#actionResult, el('p', { role: 'alert', class: 'refusal' }, 'The idempotency key must be 16 to 128 of A-Z a-z 0-9 . _ ~ -'));
      return;
    }
    replaceChildren(this.#actionResult, el('p', { role: 'status' }, `${action.label} ...`));
    try {
      const receipt = await action.run(this.#context.client, this.#job, key);
      replaceChildren(
        this.#actionResult,
        el('p', { role: 'status', class: 'done' }, `${action.label}: done${receipt.replayed ? ' (replayed: this key was used before; the first answer is shown)' : ''}, key `, el('code', {}, key)),
      );
      this.#actionKey.value = newIdempotencyKey();
      this.#scheduleRefresh();
      if (!this.#streaming) void this.#follow();
    } catch (error) {
      if (this.#context.signal.aborted) return;
      if (error instanceof SignalPayloadError) {
        replaceChildren(this.#actionResult, el('p', { role: 'alert', class: 'refusal' }, `Signal payload: ${error.message}`));
        return;
      }
      replaceChildren(this.#actionResult, refusalView(action.label, error));
    }
  }

  /** Streams the journal from the last event seen, verifying each event in the browser, until the job's last event. */
  async #follow(): Promise<void> {
    const { client, signal } = this.#context;
    this.#streaming = true;
    this.#streamState.textContent = 'Live: events appear as they are written.';
    try {
      if (this.#chain === undefined) {
        const journal = await client.readEvents(this.#job.id, { pageSize: 1, signal });
        this.#chain = new BrowserChain(this.#job.id, journal.requestDigest);
      }
      const after = this.#events.at(-1)?.sequence ?? 0n;
      for await (const frame of client.watch(this.#job.id, { afterSequence: after, signal })) {
        if (frame.kind === 'event') this.#onEvent(frame.event);
        else this.#onProgress(frame.progress);
      }
      this.#streamState.textContent = 'The job has ended: its journal is complete.';
    } catch (error) {
      if (signal.aborted) return;
      const refusal = describeRefusal(error);
      if (refusal.reason === 'JOURNAL_CORRUPT') {
        const sequence = refusal.metadata['sequence'] ?? '?';
        const by = refusal.metadata['detected_by'] === 'client' ? 'the client library' : 'the server';
        this.#showChain({ kind: 'broken', sequence: BigInt(/^\d+$/.test(sequence) ? sequence : 0), why: `${by} refused the journal (DATA_LOSS, JOURNAL_CORRUPT)` });
      }
      this.#streamState.textContent = 'The event stream stopped.';
      this.#streamState.after(refusalView('The event stream', error));
    } finally {
      this.#streaming = false;
      this.#scheduleRefresh();
    }
  }

  #onEvent(event: Event): void {
    this.#events.push(event);
    const payload = JSON.stringify(event.payload ?? {}, null, 2);
    this.#timeline.append(
      el(
        'li',
        { 'data-sequence': String(event.sequence), 'data-type': event.type },
        el('span', { class: 'sequence' }, String(event.sequence)),
        ' ',
        el('code', { class: 'event-type' }, event.type),
        ' ',
        el('time', {}, formatTime(event.occurredAt)),
        event.attemptId === '' ? '' : ` attempt ${event.attemptId}${event.fence === undefined ? '' : `, fence ${event.fence}`}`,
        payload === '{}' ? '' : el('details', {}, el('summary', {}, 'payload'), el('pre', {}, payload)),
      ),
    );
    const chain = this.#chain;
    if (chain !== undefined) {
      this.#verifying = this.#verifying.then(async () => {
        if (this.#badge.dataset['state'] === 'broken') return;
        this.#showChain(await chain.accept(event));
      });
    }
    this.#renderAttempts();
    this.#scheduleRefresh();
  }

  #onProgress(progress: Progress): void {
    this.#job = { ...this.#job, progress };
    this.#renderProgress();
  }

  #showChain(state: ChainState): void {
    if (this.#badge.dataset['state'] === 'broken') return;
    this.#badge.dataset['state'] = state.kind;
    this.#badge.dataset['sequence'] = String(state.sequence);
    this.#badge.className = `badge badge-${state.kind}`;
    this.#badge.textContent =
      state.kind === 'verified'
        ? `Chain verified in this browser (SubtleCrypto) up to sequence ${state.sequence}`
        : `Chain BROKEN at sequence ${state.sequence}: ${state.why}`;
  }

  #scheduleRefresh(): void {
    clearTimeout(this.#refreshTimer);
    this.#refreshTimer = setTimeout(() => {
      if (this.#context.signal.aborted) return;
      this.#context.client
        .explain(this.#job.id, { signal: this.#context.signal })
        .then(({ job, reasons }) => {
          this.#job = job;
          this.#reasons = reasons;
          this.#render();
        })
        .catch(() => {
          // The stream and the actions report failures; a missed refresh is retried by the next event.
        });
    }, REFRESH_DELAY_MS);
  }

  #render(): void {
    const job = this.#job;
    const facts: [string, Node | string][] = [
      ['Status', statusView(job.status)],
      ['Revision', String(job.revision)],
      ['Queue', job.queue],
      ['Label', job.label === '' ? '-' : job.label],
      ['Owner', job.owner],
      ['Priority', String(job.priority)],
      ['Attempts', `${job.attemptCount} of ${job.maxAttempts}`],
      ['Current attempt', job.authoritativeAttempt ? `${job.authoritativeAttempt.attemptId}, fence ${job.authoritativeAttempt.fence}` : '-'],
      ['Visibility', job.lifecycle === JobLifecycle.ACTIVE ? 'active' : (JobLifecycle[job.lifecycle] ?? '-').toLowerCase()],
      ['Pending approval', job.pendingApproval ? `${job.pendingApproval.approvalId}: ${job.pendingApproval.prompt}` : '-'],
      ['Signals', `${job.latestSignalSequence} received, ${job.unresolvedSignals} unknown (delivered to a lost attempt)`],
      ['Created', formatTime(job.createdAt)],
      ['Updated', formatTime(job.updatedAt)],
      ['Latest sequence', String(job.latestSequence)],
    ];
    replaceChildren(this.#summary, ...facts.flatMap(([name, value]) => [el('dt', {}, name), el('dd', { 'data-fact': name }, value)]));
    this.#summary.dataset['status'] = statusName(job.status);
    this.#input.textContent = JSON.stringify(job.input ?? {}, null, 2);
    this.#renderOutcome();
    this.#renderProgress();
    this.#renderAttempts();
    this.#renderWhy();
    this.#graph.render(this.#job);
  }

  /** While the job waits (neither running nor ended): why, most decisive reason first (ExplainJob). */
  #renderWhy(): void {
    const waiting = this.#reasons.length > 0 && !this.#reasons.some((reason) => reason.code === ExplainCode.RUNNING || reason.code === ExplainCode.TERMINAL);
    this.#why.hidden = !waiting;
    if (!waiting) return;
    replaceChildren(
      this.#why,
      el('h2', { id: 'why-title' }, 'Why it is not running'),
      el(
        'ol',
        { id: 'job-reasons' },
        ...this.#reasons.map((reason) =>
          el('li', { 'data-code': ExplainCode[reason.code] ?? 'UNSPECIFIED' }, el('code', {}, ExplainCode[reason.code] ?? 'UNSPECIFIED'), ` ${reason.message}`),
        ),
      ),
    );
  }

  #renderProgress(): void {
    replaceChildren(this.#progress, el('span', { class: 'fact-name' }, 'Progress '), progressView(this.#job.progress, 'Job progress'));
  }

  #renderOutcome(): void {
    const { result, failure, status } = this.#job;
    if (failure !== undefined) {
      replaceChildren(
        this.#outcome,
        el('p', {}, 'Failure ', el('code', {}, FailureClass[failure.failureClass] ?? 'UNSPECIFIED'), failure.retryable ? ' (retryable)' : ' (permanent)', `: ${failure.message}`),
        failure.safeDetails === undefined ? '' : el('pre', {}, JSON.stringify(failure.safeDetails, null, 2)),
      );
    } else if (result !== undefined) {
      replaceChildren(this.#outcome, el('pre', { id: 'job-result' }, JSON.stringify(result, null, 2)));
    } else {
      replaceChildren(this.#outcome, el('p', {}, isTerminalStatus(status) ? 'No result was recorded.' : 'Not finished yet.'));
    }
  }

  #attemptsTable(): HTMLTableElement {
    return el(
      'table',
      {},
      el('thead', {}, el('tr', {}, ...['Attempt', 'Fence', 'Started', 'Last event'].map((name) => el('th', { scope: 'col' }, name)))),
      this.#attempts,
    );
  }

  #renderAttempts(): void {
    const attempts = attemptsOf(this.#events);
    if (attempts.length === 0) {
      replaceChildren(this.#attempts, el('tr', {}, el('td', { colspan: 4 }, 'No attempt has started.')));
      return;
    }
    replaceChildren(
      this.#attempts,
      ...attempts.map((attempt) =>
        el(
          'tr',
          { 'data-attempt-id': attempt.attemptId },
          el('td', {}, el('code', {}, attempt.attemptId)),
          el('td', { 'data-fence': attempt.fence === undefined ? '' : String(attempt.fence) }, attempt.fence === undefined ? '-' : String(attempt.fence)),
          el('td', {}, formatTime(attempt.startedAt)),
          el('td', {}, el('code', {}, attempt.lastEvent)),
        ),
      ),
    );
  }
}

/** A signal payload that is not a JSON object: refused in the page, before any call. */
class SignalPayloadError extends Error {
  override readonly name = 'SignalPayloadError';
}
