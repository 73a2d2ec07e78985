import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter } from '@connectrpc/connect';
import type { Kysely } from 'kysely';
import {
  AdmitJobResponseSchema,
  GetJobResponseSchema,
  ListJobsResponseSchema,
  StateService,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Database } from '../db/tables/index.js';
import { admitJob } from '../domain/admit-job.js';
import { getJob, listJobs } from '../domain/read-jobs.js';
import { parseAdmitJobRequest, parseJobId, parseListJobsRequest, viewerOf } from '../domain/state-requests.js';

/** What the StateService handlers need. */
export interface StateRoutesDependencies {
  readonly db: Kysely<Database>;
}

/** Registers docket.state.v1.StateService: validate, call the domain, answer. */
export function stateServiceRoutes(deps: StateRoutesDependencies): (router: ConnectRouter) => void {
  return (router) => {
    router.service(StateService, {
      async admitJob(request) {
        const outcome = await admitJob(deps.db, parseAdmitJobRequest(request));
        return create(AdmitJobResponseSchema, {
          job: outcome.job,
          replayed: outcome.replayed,
          idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt),
        });
      },
      async getJob(request) {
        const job = await getJob(deps.db, viewerOf(request.caller), parseJobId(request.jobId));
        return create(GetJobResponseSchema, { job });
      },
      async listJobs(request) {
        const page = await listJobs(deps.db, parseListJobsRequest(request));
        return create(ListJobsResponseSchema, page);
      },
    });
  };
}
