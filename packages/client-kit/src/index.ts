export { bearerAuth, bearerValue, type TokenSource } from './bearer.js';
export { failureOfStatus } from './item-failure.js';
