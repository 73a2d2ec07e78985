import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { create, fromJsonString, toJson } from '@bufbuild/protobuf';
import type { BatchJob, DocketClient, DocketClientError, SubmitManyResult } from '@docket/client';
import { SubmitJobRequestSchema, SubmitJobResponseSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { CliContext } from './command.js';
import { describeClientFailure, reportingClientFailures } from './job-client.js';
import { codeName, requestKey, type OwnerOptions } from './owner-call.js';

/** Where `docket submit --file` reads its jobs, and how it reports them. */
export interface SubmitFileArguments {
  /** The NDJSON file, or `-` for standard input. */
  readonly file: string;
  readonly json: boolean;
  readonly owner: OwnerOptions;
}

/** Width of the progress bar, in characters. */
const BAR_WIDTH = 30;

/** One line of the file: the job it asks for, or why it is not one. */
type FileLine = { readonly line: number; readonly job: BatchJob } | { readonly line: number; readonly refusal: string };

/**
 * `docket submit --file jobs.ndjson`: every non-empty line is one SubmitJob
 * request in proto3 JSON (`{"queue": "emails", "input": {...}}`), admitted
 * through the SDK's `submitMany` (SubmitJobs calls of up to 1,000 jobs, in
 * file order). A line without its own `idempotencyKey` gets `<key>.<line>`
 * from `--key` (or from the key printed for the run), so running the same
 * file again with that key replays it instead of admitting twice. On a
 * terminal a progress bar is redrawn as calls are answered. Every refused
 * line is printed to standard error (`line N: <code> <REASON>: ...`), then
 * one summary line; with `--json`, one line of JSON per job instead.
 * Resolves to 0 when every line was admitted (or replayed), else 1.
 */
export async function submitFile(client: DocketClient, parsed: SubmitFileArguments, context: CliContext): Promise<number> {
  return reportingClientFailures('submit', { name: 'admission', url: parsed.owner.url }, context, async () => {
    const text = parsed.file === '-' ? await readStandardInput() : await readFile(resolve(context.cwd, parsed.file), 'utf8');
    const base = requestKey('submit', parsed.owner, context);
    const lines = fileLines(text, base);
    const jobs = lines.flatMap((entry) => ('job' in entry ? [entry.job] : []));
    const terminal = context.outIsTerminal === true && !parsed.json;
    const results = await client.submitMany(jobs, { onProgress: terminal ? (answered, total) => context.out(`\r${bar(answered, total)}`) : undefined });
    if (terminal && jobs.length > 0) context.out('\n');
    let next = 0;
    const counts = { submitted: 0, replayed: 0, failed: 0 };
    for (const entry of lines) {
      const result = 'job' in entry ? (results[next++] as SubmitManyResult) : undefined;
      if (result?.ok) counts[result.replayed ? 'replayed' : 'submitted'] += 1;
      else counts.failed += 1;
      if (parsed.json) context.out(`${JSON.stringify(jsonLine(entry.line, result, 'refusal' in entry ? entry.refusal : undefined))}\n`);
      else if (!result) context.err(`docket submit: line ${entry.line}: ${'refusal' in entry ? entry.refusal : ''}\n`);
      else if (!result.ok) context.err(`docket submit: line ${entry.line}: ${describeClientFailure(result.error, { name: 'admission', url: parsed.owner.url })}${violationsOf(result.error)}\n`);
    }
    if (!parsed.json) {
      context.out(`submitted ${counts.submitted} jobs from ${parsed.file === '-' ? 'standard input' : parsed.file} (${counts.replayed} replayed, ${counts.failed} failed)\n`);
    }
    return counts.failed === 0 ? 0 : 1;
  });
}

/** The file's non-empty lines, numbered from 1, each parsed as a SubmitJob request (keys defaulted to `<base>.<line>`). */
function fileLines(text: string, base: string): FileLine[] {
  return text.split('\n').flatMap((raw, index): FileLine[] => {
    const line = index + 1;
    if (raw.trim() === '') return [];
    try {
      const request = fromJsonString(SubmitJobRequestSchema, raw);
      return [{ line, job: { ...request, idempotencyKey: request.idempotencyKey === '' ? `${base}.${line}` : request.idempotencyKey } }];
    } catch (error) {
      return [{ line, refusal: `invalid_argument: not a SubmitJob request in proto3 JSON (${error instanceof Error ? error.message : String(error)})` }];
    }
  });
}

/** One `--json` line: the SubmitJob response, or the error, of the job on `line`. */
function jsonLine(line: number, result: SubmitManyResult | undefined, refusal: string | undefined): object {
  if (result?.ok) {
    const { job, replayed, deduplicated, idempotencyExpiresAt } = result;
    const response = { job, replayed, deduplicated, ...(idempotencyExpiresAt ? { idempotencyExpiresAt: timestampFromDate(idempotencyExpiresAt) } : {}) };
    return { line, submitted: toJson(SubmitJobResponseSchema, create(SubmitJobResponseSchema, response)) };
  }
  if (result) {
    const { code, reason, message, fieldViolations } = result.error;
    return { line, error: { code: codeName(code), reason: reason ?? null, message, fieldViolations } };
  }
  return { line, error: { code: 'invalid_argument', reason: null, message: refusal ?? '' } };
}

/** ` (field: what is wrong; ...)` for a refusal with field violations, else nothing. */
function violationsOf(error: DocketClientError): string {
  return error.fieldViolations.length === 0 ? '' : ` (${error.fieldViolations.map((violation) => `${violation.field}: ${violation.description}`).join('; ')})`;
}

/** `[#####.....] 1000/2500` */
function bar(answered: number, total: number): string {
  const filled = total === 0 ? BAR_WIDTH : Math.round((answered / total) * BAR_WIDTH);
  return `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${answered}/${total}`;
}

async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
