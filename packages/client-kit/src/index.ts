export { failureOfStatus } from './item-failure.js';
