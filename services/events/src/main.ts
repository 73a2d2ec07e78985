import { runService } from '@docket/service-kit';
import { startEventsService } from './events-service.js';

runService('events', (logger) => startEventsService(process.env, logger));
