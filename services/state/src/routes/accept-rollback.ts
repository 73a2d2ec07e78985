import { create } from '@bufbuild/protobuf';
import type pg from 'pg';
import { AcceptRollbackResponseSchema, type AcceptRollbackRequest, type AcceptRollbackResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { RollbackGuard } from '../failover/rollback-guard.js';
import { formatWalPosition } from '../failover/wal-position.js';

/**
 * AcceptRollback: the guard's report of what a rollback may have lost and,
 * unless `dry_run`, its acceptance; positions as PostgreSQL prints them.
 */
export async function answerAcceptRollback(guard: RollbackGuard, pool: pg.Pool, request: AcceptRollbackRequest): Promise<AcceptRollbackResponse> {
  const report = await guard.acceptRollback(pool, request.dryRun);
  const rollback = report.rollback;
  return create(AcceptRollbackResponseSchema, {
    rolledBack: report.rolledBack,
    accepted: report.accepted,
    checkedJobCount: report.checkedJobCount,
    lostJobIds: [...report.lostJobIds],
    windowTruncated: report.windowTruncated,
    windowStartLsn: report.windowStartLsn === undefined ? '' : formatWalPosition(report.windowStartLsn),
    ...(rollback
      ? {
          cause: rollback.cause,
          recordedSystemIdentifier: rollback.recorded.systemIdentifier ?? '',
          systemIdentifier: rollback.observed.systemIdentifier ?? '',
          recordedTimeline: rollback.recorded.timeline,
          timeline: rollback.observed.timeline,
          forkLsn: formatWalPosition(rollback.forkLsn),
          forkSource: rollback.forkSource,
          acknowledgedLsn: formatWalPosition(rollback.acknowledgedLsn),
          acknowledgedAfterLastReading: rollback.unboundedAcknowledgements,
        }
      : {}),
  });
}
