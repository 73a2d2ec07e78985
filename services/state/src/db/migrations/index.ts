import { initial } from './20261129-0001-initial.js';
import { jobChanges } from './20261129-0002-job-changes.js';
import { execution } from './20261129-0003-execution.js';
import { humanLoop } from './20261201-0004-human-loop.js';
import { afterTheEnd } from './20261201-0005-after-the-end.js';
import { jobQuarantine } from './20261201-0006-job-quarantine.js';
import { uniqueAndLimits } from './20261201-0007-unique-and-limits.js';
import { queuePolicies } from './20261201-0009-queue-policies.js';
import { schedules } from './20261201-0008-schedules.js';
import { workerLastSeen } from './20261206-0010-worker-last-seen.js';
import { queueStats } from './20261206-0011-queue-stats.js';
import { bulkOperations } from './20261206-0012-bulk-operations.js';
import { dependencies } from './20261206-0013-dependencies.js';
import { queueStatsJoin } from './20261206-0014-queue-stats-join.js';
import { queueStatsPlan } from './20261206-0015-queue-stats-plan.js';
import { batchRefusal } from './20261207-0016-batch-refusal.js';
import { cheapChecks } from './20261207-0017-cheap-checks.js';
import type { Migration } from './migration.js';

export type { Migration } from './migration.js';

/** Every migration this build knows, in order. Append only. */
export const MIGRATIONS: readonly Migration[] = [initial, jobChanges, execution, humanLoop, afterTheEnd, jobQuarantine, uniqueAndLimits, schedules, queuePolicies, workerLastSeen, queueStats, bulkOperations, dependencies, queueStatsJoin, queueStatsPlan, batchRefusal, cheapChecks];
