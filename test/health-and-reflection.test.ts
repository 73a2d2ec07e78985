import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DescService } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { Health, HealthCheckResponse_ServingStatus } from '@docket/proto/grpc/health/v1/health_pb.js';
import { clientFor } from './support/clients.js';
import { REPO_ROOT, type ServiceName } from './support/cluster.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';

const run = promisify(execFile);
const SERVED: Record<ServiceName, DescService> = {
  state: StateService,
  admission: AdmissionService,
  execution: ExecutionService,
  events: EventService,
};

let cluster: DocketServices;

beforeAll(async () => {
  cluster = await startInProcessCluster({ databaseUrl: await createMigratedTestDatabase('health and reflection') });
});

afterAll(stopInProcessClusters);

describe.each(Object.entries(SERVED) as [ServiceName, DescService][])('%s', (name, service) => {
  it('answers grpc.health.v1.Health/Check SERVING, without a token, for itself and overall', async () => {
    const health = clientFor(Health, cluster[name].url);
    expect((await health.check({ service: '' })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect((await health.check({ service: service.typeName })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it('lists every RPC through server reflection (buf curl --list-methods)', async () => {
    for (const protocol of ['grpc', 'connect']) {
      const { stdout } = await run(join(REPO_ROOT, 'node_modules/.bin/buf'), [
        'curl',
        '--http2-prior-knowledge',
        '--protocol',
        protocol,
        '--list-methods',
        cluster[name].url,
      ]);
      const listed = stdout.trim().split('\n');
      for (const method of service.methods) expect(listed).toContain(`${service.typeName}/${method.name}`);
      expect(listed).toContain('grpc.health.v1.Health/Check');
    }
  });
});
