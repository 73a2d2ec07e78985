import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient as createConnectClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { tracedCalls } from '@docket/trace-context';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type DocketClient } from '@docket/client';
import { startCluster, stopAll, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';

/*
 * OpenTelemetry tracing, configured the way an operator does it (the
 * standard OTEL_* variables), crosses every hop of one SubmitJob: the
 * client SDK's span (this process, an in-memory exporter) is the parent of
 * admission's server span, whose call to state is the parent of state's
 * server span, whose statements are Postgres spans. Admission and state
 * export over OTLP/HTTP JSON to a collector this test runs, and their log
 * lines carry the trace id.
 */

/** One span as an OTLP/HTTP JSON export carries it. */
interface ExportedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, unknown>>;
}

interface OtlpValue {
  readonly stringValue?: string;
  readonly intValue?: string | number;
}

interface OtlpExport {
  readonly resourceSpans: readonly {
    readonly resource: { readonly attributes: readonly { key: string; value: OtlpValue }[] };
    readonly scopeSpans: readonly {
      readonly spans: readonly {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: readonly { key: string; value: OtlpValue }[];
      }[];
    }[];
  }[];
}

const received: ExportedSpan[] = [];
let collector: Server;
let cluster: DocketCluster;
let client: DocketClient;
const local = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(local)] });

function valueOf(value: OtlpValue): unknown {
  return value.stringValue ?? value.intValue;
}

function attributesOf(list: readonly { key: string; value: OtlpValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

/** A collector endpoint: POST /v1/traces with OTLP JSON, answered 200 as a collector does. */
async function startCollector(): Promise<Server> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      expect(request.url).toBe('/v1/traces');
      expect(request.headers['content-type']).toBe('application/json');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
      for (const resourceSpans of body.resourceSpans) {
        const service = String(attributesOf(resourceSpans.resource.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) {
            received.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** Polls the collector every 50 ms until `until` holds of the trace's spans, or 15 s have passed; the spans then. */
async function spansOf(traceId: string, until: (spans: ExportedSpan[]) => boolean): Promise<ExportedSpan[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const spans = received.filter((span) => span.traceId === traceId);
    if (until(spans) || Date.now() > deadline) return spans;
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  provider.register();
  collector = await startCollector();
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`;
  const traced = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', DOCKET_LOG_LEVEL: 'debug' };
  cluster = await startCluster({
    databaseUrl: await createMigratedTestDatabase('traces'),
    env: { state: traced, admission: traced, execution: { DOCKET_BACKGROUND_LOOPS: 'off', DOCKET_LOG_LEVEL: 'debug' } },
  });
  client = createClient({ admissionUrl: cluster.admission.url, eventsUrl: cluster.events.url, token: await cluster.tokenFor('trace-owner', 'user') });
});

afterAll(async () => {
  client?.close();
  await stopAll();
  await new Promise((resolve) => collector?.close(resolve));
  await provider.shutdown();
  trace.disable();
});

describe('one SubmitJob traced end to end', () => {
  it('spans the client, admission, state and Postgres in one trace, and the logs carry its id', async () => {
    const tracer = trace.getTracer('traces.test');
    const job = await tracer.startActiveSpan('submit an order', async (span) => {
      try {
        return (await client.submit({ queue: 'traced', input: { order: 17 } })).job;
      } finally {
        span.end();
      }
    });
    expect(job.status).toBeDefined();

    const [root, clientCall] = ['submit an order', 'docket.admission.v1.AdmissionService/SubmitJob'].map((name) => {
      const found = local.getFinishedSpans().filter((span) => span.name === name);
      expect(found).toHaveLength(1);
      return found[0]!;
    }) as [ReturnType<InMemorySpanExporter['getFinishedSpans']>[number], ReturnType<InMemorySpanExporter['getFinishedSpans']>[number]];
    const traceId = root.spanContext().traceId;
    expect(clientCall.spanContext().traceId).toBe(traceId);
    expect(clientCall.parentSpanContext?.spanId).toBe(root.spanContext().spanId);

    // Each process exports its own spans in its own batches: wait for the last span of each (admission's server span ends after its call to state).
    const spans = await spansOf(
      traceId,
      (seen) =>
        seen.some((span) => span.service === 'docket-state' && span.attributes['db.system.name'] === 'postgresql') &&
        seen.some((span) => span.service === 'docket-admission' && span.kind === 2),
    );
    const one = (service: string, name: string, kind: number): ExportedSpan => {
      const found = spans.filter((span) => span.service === service && span.name === name && span.kind === kind);
      expect(found, `${service} ${name}`).toHaveLength(1);
      return found[0]!;
    };
    const admissionServer = one('docket-admission', 'docket.admission.v1.AdmissionService/SubmitJob', 2);
    expect(admissionServer.parentSpanId).toBe(clientCall.spanContext().spanId);
    expect(admissionServer.attributes).toMatchObject({ 'rpc.service': 'docket.admission.v1.AdmissionService', 'rpc.method': 'SubmitJob' });

    const toState = spans.filter((span) => span.service === 'docket-admission' && span.kind === 3);
    expect(toState).toHaveLength(1);
    expect(toState[0]!.parentSpanId).toBe(admissionServer.spanId);
    const stateServer = one('docket-state', toState[0]!.name, 2);
    expect(stateServer.parentSpanId).toBe(toState[0]!.spanId);

    const statements = spans.filter((span) => span.service === 'docket-state' && span.attributes['db.system.name'] === 'postgresql');
    expect(statements.length).toBeGreaterThanOrEqual(2);
    for (const statement of statements) {
      expect(statement.kind).toBe(3);
      expect(statement.parentSpanId).toBe(stateServer.spanId);
      // Neither SQL text nor parameters leave in a span.
      expect(Object.keys(statement.attributes).sort()).toEqual(['db.operation.name', 'db.system.name']);
    }
    expect(statements.map((statement) => statement.name)).toContain('BEGIN');

    const logged = (lines: readonly string[]) =>
      lines.map((line) => JSON.parse(line) as { msg?: string; trace_id?: string }).filter((line) => line.msg === 'rpc' && line.trace_id === traceId);
    expect(logged(cluster.admission.logs)).toHaveLength(1);
    expect(logged(cluster.state.logs)).toHaveLength(1);
  });

  it('exports and logs nothing in a service where tracing is not configured, even for a traced caller', async () => {
    const token = await cluster.tokenFor('trace-worker', 'worker');
    const bearer: Interceptor = (next) => (req) => {
      req.header.set('authorization', `Bearer ${token}`);
      return next(req);
    };
    const execution = createConnectClient(
      ExecutionService,
      createGrpcTransport({ baseUrl: cluster.execution.url, interceptors: [bearer, tracedCalls('traces.test')] }),
    );
    const traceId = await trace.getTracer('traces.test').startActiveSpan('a traced worker call', async (span) => {
      // A claim without a worker is refused: a logged call all the same.
      await expect(execution.claimJobs({})).rejects.toThrow();
      span.end();
      return span.spanContext().traceId;
    });
    const sent = local.getFinishedSpans().filter((span) => span.name === 'docket.execution.v1.ExecutionService/ClaimJobs');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.spanContext().traceId).toBe(traceId);

    const rpcLines = () => cluster.execution.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'rpc' && line.rpc === '/docket.execution.v1.ExecutionService/ClaimJobs');
    await expect.poll(() => rpcLines().length).toBe(1);
    expect(rpcLines()[0]).not.toHaveProperty('trace_id');
    // Real time: a negative assertion: no span reaches the collector within 300 ms.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received.filter((span) => span.traceId === traceId)).toEqual([]);
    expect(received.filter((span) => span.service === 'docket-execution')).toEqual([]);
  });
});
