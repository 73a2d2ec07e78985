import { runService } from '@docket/service-kit';
import { startExecutionService } from './execution-service.js';

runService('execution', (logger) => startExecutionService(process.env, logger));
