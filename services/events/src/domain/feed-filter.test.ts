import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { WatchJobsFilterSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { parseFeedFilter } from './feed-filter.js';

describe('parseFeedFilter', () => {
  it('normalises statuses (sorted, deduplicated) and keeps the queue', () => {
    const filter = create(WatchJobsFilterSchema, { statuses: [JobStatus.FAILED, JobStatus.QUEUED, JobStatus.FAILED], queue: 'email' });
    expect(parseFeedFilter(filter)).toEqual({ statuses: [JobStatus.QUEUED, JobStatus.FAILED], queue: 'email' });
    expect(parseFeedFilter(undefined)).toEqual({ statuses: [], queue: '' });
  });

  it('refuses UNSPECIFIED or unknown statuses and a bad queue, naming the field', () => {
    const refusal = (statuses: number[], queue = '') => {
      try {
        parseFeedFilter(create(WatchJobsFilterSchema, { statuses, queue }));
        return undefined;
      } catch (error) {
        return error;
      }
    };
    expect(refusal([JobStatus.QUEUED, JobStatus.UNSPECIFIED])).toMatchObject({
      reason: 'INVALID_FIELD',
      fieldViolations: [{ field: 'filter.statuses[1]' }],
    });
    expect(refusal([42])).toMatchObject({ reason: 'INVALID_FIELD', fieldViolations: [{ field: 'filter.statuses[0]' }] });
    expect(refusal([], 'Not A Queue')).toMatchObject({ reason: 'INVALID_FIELD', fieldViolations: [{ field: 'filter.queue' }] });
  });
});
