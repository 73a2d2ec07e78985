import type { ConsoleConfig } from '../console-config.js';
import { connect } from '../connection.js';
import { el, replaceChildren } from '../dom.js';
import { signIn } from '../session.js';
import { refusalView } from './refusal-view.js';

/**
 * Sign-in with a pasted bearer token (under `npm start`, the development
 * user token it prints). The token is tried with one ListJobs call before
 * it is kept, in this tab's sessionStorage only.
 */
export function showSignIn(main: HTMLElement, config: ConsoleConfig, onSignedIn: () => void): void {
  const token = el('textarea', { id: 'token', name: 'token', rows: 4, required: true, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'token-help' });
  const outcome = el('div', { id: 'sign-in-outcome', 'aria-live': 'polite' });
  const button = el('button', { type: 'submit' }, 'Sign in');
  const form = el(
    'form',
    { class: 'card', 'aria-labelledby': 'sign-in-title' },
    el('label', { for: 'token' }, 'Bearer token'),
    token,
    el(
      'p',
      { id: 'token-help', class: 'help' },
      'Paste a Docket token (npm start prints a development user token). It is kept in this tab only and sent to ',
      el('code', {}, config.admissionUrl),
      ' and ',
      el('code', {}, config.eventsUrl),
      '.',
    ),
    button,
    outcome,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = token.value.trim();
    if (value === '') return;
    button.disabled = true;
    replaceChildren(outcome, el('p', { role: 'status' }, 'Checking the token ...'));
    connect(config, value)
      .listPage({ pageSize: 1 })
      .then(() => {
        signIn(value);
        onSignedIn();
      })
      .catch((error: unknown) => replaceChildren(outcome, refusalView('Sign-in', error)))
      .finally(() => (button.disabled = false));
  });
  replaceChildren(main, el('h1', { id: 'sign-in-title' }, 'Sign in'), form);
  token.focus();
}
