import { invalidField, isValidQueueName } from '@docket/contracts';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { WatchJobsFilter } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { normaliseFeedFilter, type FeedCursorFilter } from '@docket/service-kit';

/**
 * Validates a WatchJobs filter and puts it in the normal form cursors are
 * bound to. An UNSPECIFIED or unknown status, or a queue that is not a
 * queue name, is INVALID_ARGUMENT (INVALID_FIELD) naming the field.
 */
export function parseFeedFilter(filter: WatchJobsFilter | undefined): FeedCursorFilter {
  const statuses = filter?.statuses ?? [];
  statuses.forEach((status, index) => {
    if (status === JobStatus.UNSPECIFIED || JobStatus[status] === undefined) {
      throw invalidField(`filter.statuses[${index}]`, 'must be a job status');
    }
  });
  const queue = filter?.queue ?? '';
  if (queue !== '' && !isValidQueueName(queue)) throw invalidField('filter.queue', 'must be empty or a queue name');
  return normaliseFeedFilter({ statuses, queue });
}
