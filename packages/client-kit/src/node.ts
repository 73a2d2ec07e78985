/**
 * `@docket/client-kit/node`: what only Node callers share, kept out of the
 * main entry so that browsers (the console, through the client's browser
 * entry) never load connect-node.
 */
export { createServiceConnection, type ServiceConnection, type ServiceConnectionOptions } from './service-connection.js';
