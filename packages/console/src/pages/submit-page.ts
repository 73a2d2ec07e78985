import { isValidIdempotencyKey, newIdempotencyKey } from '@docket/client';
import { isValidQueueName } from '@docket/contracts';
import { el, replaceChildren } from '../dom.js';
import { parseJsonObject } from '../json-input.js';
import { jobHref } from '../route.js';
import { statusName } from '../job-facts.js';
import type { PageContext } from './page-context.js';
import { refusalView } from './refusal-view.js';

/**
 * The submit form: queue, input (checked as a JSON object while it is
 * typed), label, priority, attempts, and the idempotency key, generated
 * and shown so that a submission whose answer was lost can be sent again
 * with the same key (the service replays it: one job per key).
 */
export function showSubmit(context: PageContext): void {
  const { client, main, signal } = context;
  const queue = el('input', { id: 'submit-queue', name: 'queue', type: 'text', required: true, value: 'default', autocomplete: 'off' });
  const input = el('textarea', { id: 'submit-input', name: 'input', rows: 6, spellcheck: 'false', 'aria-describedby': 'input-error' }, '{"count":10,"delay_ms":200}');
  const inputError = el('p', { id: 'input-error', class: 'field-error', 'aria-live': 'polite' });
  const label = el('input', { id: 'submit-label', name: 'label', type: 'text', autocomplete: 'off' });
  const priority = el('input', { id: 'submit-priority', name: 'priority', type: 'number', value: '0', step: '1' });
  const maxAttempts = el('input', { id: 'submit-max-attempts', name: 'maxAttempts', type: 'number', min: '1', step: '1', placeholder: 'default' });
  const key = el('input', { id: 'submit-key', name: 'idempotencyKey', type: 'text', required: true, autocomplete: 'off', spellcheck: 'false', size: 40, 'aria-describedby': 'key-help' });
  key.value = newIdempotencyKey();
  const outcome = el('div', { id: 'submit-outcome', 'aria-live': 'polite' });
  const button = el('button', { type: 'submit', id: 'submit-button' }, 'Submit job');

  const checkInput = (): boolean => {
    const parsed = parseJsonObject(input.value);
    input.setAttribute('aria-invalid', String(!parsed.ok));
    inputError.textContent = parsed.ok ? '' : `Input ${parsed.error}`;
    return parsed.ok;
  };
  input.addEventListener('input', checkInput);

  const form = el(
    'form',
    { class: 'card', id: 'submit-form', 'aria-labelledby': 'submit-title', novalidate: true },
    el('p', { class: 'field' }, el('label', { for: 'submit-queue' }, 'Queue'), queue),
    el('p', { class: 'field' }, el('label', { for: 'submit-input' }, 'Input (JSON object)'), input, inputError),
    el('p', { class: 'field' }, el('label', { for: 'submit-label' }, 'Label (optional)'), label),
    el('div', { class: 'inline-fields' },
      el('span', { class: 'field' }, el('label', { for: 'submit-priority' }, 'Priority (higher first)'), priority),
      el('span', { class: 'field' }, el('label', { for: 'submit-max-attempts' }, 'Max attempts'), maxAttempts),
    ),
    el(
      'p',
      { class: 'field' },
      el('label', { for: 'submit-key' }, 'Idempotency key'),
      key,
      el('button', { type: 'button', id: 'new-submit-key', onclick: () => (key.value = newIdempotencyKey()) }, 'New key'),
    ),
    el('p', { id: 'key-help', class: 'help' }, 'Keep this key to send the same submission again: the same key and request always answer with the same job. A different request with a used key is refused.'),
    button,
    outcome,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const problems: string[] = [];
    if (!checkInput()) problems.push(inputError.textContent ?? 'Input is not a JSON object');
    if (!isValidQueueName(queue.value)) problems.push('Queue: not a valid queue name');
    if (!isValidIdempotencyKey(key.value)) problems.push('Idempotency key: 16 to 128 of A-Z a-z 0-9 . _ ~ -');
    if (priority.value !== '' && !Number.isInteger(Number(priority.value))) problems.push('Priority: a whole number');
    if (maxAttempts.value !== '' && !(Number.isInteger(Number(maxAttempts.value)) && Number(maxAttempts.value) >= 1)) problems.push('Max attempts: a whole number from 1');
    if (problems.length > 0) {
      replaceChildren(outcome, el('ul', { role: 'alert', class: 'refusal' }, ...problems.map((problem) => el('li', {}, problem))));
      return;
    }
    const parsed = parseJsonObject(input.value);
    if (!parsed.ok) return;
    button.disabled = true;
    replaceChildren(outcome, el('p', { role: 'status' }, 'Submitting ...'));
    const usedKey = key.value;
    client
      .submit(
        {
          queue: queue.value,
          input: parsed.value,
          label: label.value,
          priority: Number(priority.value || 0),
          ...(maxAttempts.value === '' ? {} : { retryPolicy: { maxAttempts: Number(maxAttempts.value) } }),
        },
        { idempotencyKey: usedKey, signal },
      )
      .then((receipt) => {
        replaceChildren(
          outcome,
          el(
            'p',
            { role: 'status', class: 'done', id: 'submitted' },
            receipt.replayed ? 'Replayed: this key already submitted ' : 'Submitted ',
            el('a', { href: jobHref(receipt.job.id), id: 'submitted-job' }, receipt.job.id),
            ` to ${receipt.job.queue}: ${statusName(receipt.job.status)} (key `,
            el('code', {}, usedKey),
            ')',
          ),
        );
      })
      .catch((error: unknown) => {
        if (!signal.aborted) replaceChildren(outcome, refusalView('Submission', error));
      })
      .finally(() => (button.disabled = false));
  });
  replaceChildren(main, el('h1', { id: 'submit-title' }, 'Submit a job'), form);
  checkInput();
}
