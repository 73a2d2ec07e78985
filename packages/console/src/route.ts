import { isValidId } from '@docket/contracts';

/** The console's pages, addressed by the URL's fragment (`#/jobs/job_...`), so the token never appears in a URL or a server log. */
export type Route =
  | { readonly page: 'sign-in' }
  | { readonly page: 'jobs' }
  | { readonly page: 'job'; readonly jobId: string }
  | { readonly page: 'submit' }
  | { readonly page: 'queues' }
  | { readonly page: 'queue'; readonly queue: string }
  | { readonly page: 'workers' }
  | { readonly page: 'schedules' };

/**
 * The route of a location fragment. A job id that is not even shaped like
 * an id still routes to the job page, which shows it as not found (the
 * same page a missing or foreign job gets).
 */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '').split('?')[0] ?? '';
  const [first, second] = path.split('/');
  if (first === 'sign-in') return { page: 'sign-in' };
  if (first === 'submit') return { page: 'submit' };
  if (first === 'queues' && second !== undefined && second !== '') return { page: 'queue', queue: decodeURIComponent(second) };
  if (first === 'queues') return { page: 'queues' };
  if (first === 'workers') return { page: 'workers' };
  if (first === 'schedules') return { page: 'schedules' };
  if (first === 'jobs' && second !== undefined && second !== '') return { page: 'job', jobId: decodeURIComponent(second) };
  return { page: 'jobs' };
}

/** The fragment of a job's page. */
export function jobHref(jobId: string): string {
  return `#/jobs/${encodeURIComponent(jobId)}`;
}

/** The fragment of a queue's page. */
export function queueHref(queue: string): string {
  return `#/queues/${encodeURIComponent(queue)}`;
}

/** Whether `jobId` could name a job at all (the job page asks the service only then). */
export function looksLikeJobId(jobId: string): boolean {
  return isValidId(jobId) && jobId.startsWith('job_');
}
