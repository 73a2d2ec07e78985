import { loadConsoleConfig } from './console-config.js';
import { connect } from './connection.js';
import { el, replaceChildren } from './dom.js';
import { showJobList } from './pages/job-list-page.js';
import { showJobPage } from './pages/job-page.js';
import { showQueue, showQueues } from './pages/queue-page.js';
import { showWorkers } from './pages/workers-page.js';
import { showSchedules } from './pages/schedule-page.js';
import { showSignIn } from './pages/sign-in-page.js';
import { showSubmit } from './pages/submit-page.js';
import { parseRoute } from './route.js';
import { claimsOf, sessionToken, signOut } from './session.js';

/**
 * The console's entry: reads where the services are, then shows the page
 * the location fragment names, signed in or not. Leaving a page aborts its
 * calls and streams.
 */
async function boot(): Promise<void> {
  const config = await loadConsoleConfig();
  const main = document.getElementById('main') as HTMLElement;
  const who = document.getElementById('who') as HTMLElement;
  let leave = new AbortController();

  const show = (): void => {
    leave.abort();
    leave = new AbortController();
    const route = parseRoute(location.hash);
    const token = sessionToken();
    showWho(who, token, show);
    markCurrent(route.page);
    if (token === undefined || route.page === 'sign-in') {
      showSignIn(main, config, () => {
        location.hash = '#/jobs';
        show();
      });
      return;
    }
    const context = { client: connect(config, token), config, main, signal: leave.signal };
    if (route.page === 'job') showJobPage(context, route.jobId);
    else if (route.page === 'submit') showSubmit(context);
    else if (route.page === 'queues') showQueues(context);
    else if (route.page === 'queue') showQueue(context, route.queue);
    else if (route.page === 'workers') showWorkers(context);
    else if (route.page === 'schedules') showSchedules(context);
    else showJobList(context);
    main.focus({ preventScroll: true });
  };
  window.addEventListener('hashchange', show);
  // The fragment is the router's: the skip link moves the focus without navigating.
  document.querySelector('a.skip')?.addEventListener('click', (event) => {
    event.preventDefault();
    main.focus();
  });
  show();
}

function showWho(who: HTMLElement, token: string | undefined, reshow: () => void): void {
  if (token === undefined) {
    replaceChildren(who);
    return;
  }
  const claims = claimsOf(token);
  const out = el('button', { type: 'button', id: 'sign-out', onclick: () => (signOut(), reshow()) }, 'Sign out');
  replaceChildren(who, claims === undefined ? '' : `${claims.subject} (${claims.role}) `, out);
}

function markCurrent(page: string): void {
  for (const link of document.querySelectorAll<HTMLAnchorElement>('header nav a')) {
    const target = parseRoute(link.hash).page;
    if (target === page || (target === 'jobs' && page === 'job') || (target === 'queues' && page === 'queue')) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

void boot();
