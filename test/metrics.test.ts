import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { scrape, value } from './support/prometheus.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * Every service serves Prometheus metrics on GET /metrics of its own port:
 * RPCs by method and code (count and latency), and per service what an
 * operator watches (queue depth, pool use, batch sizes, maintenance,
 * stream subscribers). After one submit, claim and complete the counters
 * show exactly those calls.
 */

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'metrics-owner', {
    databaseUrl: await createMigratedTestDatabase('metrics'),
    env: { execution: { DOCKET_BACKGROUND_LOOPS: 'off' } },
  });
});

afterAll(() => harness?.close());


describe('GET /metrics', () => {
  it('counts exactly the calls made, in every service, in a format Prometheus parses', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('metrics');
    await harness.submit({ queue });
    const [assignment] = await worker.claim({ waitMs: 3_000 });
    await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'success', value: { result: {} } } });

    const admission = await scrape(harness.cluster.admission.url);
    const submit = { method: 'docket.admission.v1.AdmissionService/SubmitJob', code: 'OK' };
    expect(value(admission, 'docket_rpc_requests_total', submit)).toBe(1);
    expect(value(admission, 'docket_rpc_duration_seconds_count', submit)).toBe(1);
    expect(value(admission, 'docket_rpc_requests_total', { service: 'admission' })).toBeDefined();

    const execution = await scrape(harness.cluster.execution.url);
    const outcome = { method: 'docket.execution.v1.ExecutionService/ReportOutcome', code: 'OK' };
    expect(value(execution, 'docket_rpc_requests_total', outcome)).toBe(1);
    expect(value(execution, 'docket_rpc_requests_total', { method: 'docket.execution.v1.ExecutionService/RegisterWorker', code: 'OK' })).toBe(1);
    expect(value(execution, 'docket_rpc_requests_total', { method: 'docket.execution.v1.ExecutionService/ClaimJobs', code: 'OK' })).toBe(1);

    const state = await scrape(harness.cluster.state.url);
    expect(value(state, 'docket_rpc_requests_total', { method: 'docket.state.v1.StateService/AdmitJobs', code: 'OK' }) ?? value(state, 'docket_rpc_requests_total', { method: 'docket.state.v1.StateService/AdmitJob', code: 'OK' })).toBe(1);
    expect(value(state, 'docket_state_batch_size_count', { path: 'admissions' })).toBe(1);
    expect(value(state, 'docket_state_batch_size_count', { path: 'claims' })).toBeGreaterThanOrEqual(1);
    expect(value(state, 'docket_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    expect(value(state, 'docket_jobs', { queue, status: 'QUEUED' })).toBeUndefined(); // it ran to the end
    await harness.submit({ queue });
    expect(value(await scrape(harness.cluster.state.url), 'docket_jobs', { queue, status: 'QUEUED' })).toBe(1);

    const events = await scrape(harness.cluster.events.url);
    expect(value(events, 'docket_stream_subscribers', { resource: 'job_event_streams' })).toBe(0);
    expect(value(events, 'docket_process_resident_memory_bytes', {})).toBeGreaterThan(0);
  });
});
