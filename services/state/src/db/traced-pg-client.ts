import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type pg from 'pg';
import { WatchedPgClient } from './watched-pg-client.js';

const tracer = trace.getTracer('@docket/state-service');

/**
 * The pool's connection class: a {@link WatchedPgClient} whose promise-returning
 * queries are CLIENT spans (`db.system.name: postgresql`) of the trace
 * active when they are issued, so one SubmitJob's trace reaches from the
 * client through admission and state into each statement it ran. A span
 * is named by the prepared statement's name or the statement's first
 * keyword (`BEGIN`, `INSERT`, ...), and carries neither SQL text nor
 * parameters; a failure records only the SQLSTATE. Queries outside a
 * recording span (tracing off, background work not in a trace) and
 * callback or stream queries run exactly as in `pg.Client`.
 */
export class TracedPgClient extends WatchedPgClient {
  // pg's overloads are many; this one passes every call through unchanged.
  override query(...args: any[]): any {
    const parent = trace.getActiveSpan();
    const statement: unknown = args[0];
    const withCallback = args.some((arg) => typeof arg === 'function');
    if (parent === undefined || !parent.isRecording() || withCallback || isSubmittable(statement)) {
      return super.query(...(args as Parameters<pg.Client['query']>));
    }
    const operation = operationOf(statement);
    const span = tracer.startSpan(operation, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation },
    });
    const running = super.query(...(args as Parameters<pg.Client['query']>)) as unknown as Promise<unknown>;
    return running.then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'string') span.setAttribute('db.response.status_code', code);
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        throw error;
      },
    );
  }
}

function isSubmittable(statement: unknown): boolean {
  return typeof statement === 'object' && statement !== null && typeof (statement as { submit?: unknown }).submit === 'function';
}

/** A prepared statement's name, or the first keyword of the SQL text, upper-cased. */
function operationOf(statement: unknown): string {
  if (typeof statement === 'object' && statement !== null) {
    const { name, text } = statement as { name?: unknown; text?: unknown };
    if (typeof name === 'string' && name !== '') return name;
    return firstKeyword(typeof text === 'string' ? text : '');
  }
  return firstKeyword(typeof statement === 'string' ? statement : '');
}

function firstKeyword(sql: string): string {
  return /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase() ?? 'QUERY';
}
