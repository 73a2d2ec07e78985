import { runService } from '@docket/service-kit';
import { startAdmissionService } from './admission-service.js';

runService('admission', (logger) => startAdmissionService(process.env, logger));
