import { el } from '../dom.js';
import { describeRefusal } from '../refusal-text.js';

/** A refusal as an alert: the reason, then what it means. */
export function refusalView(what: string, error: unknown): HTMLElement {
  const refusal = describeRefusal(error);
  return el('p', { class: 'refusal', role: 'alert' }, `${what} refused: `, el('code', {}, refusal.reason), ` - ${refusal.words}`);
}

