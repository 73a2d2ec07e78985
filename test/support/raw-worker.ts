import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { create, fromJson, toJson, type JsonValue, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { ExecutionService, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import type { AttemptRefSchema } from '@docket/proto/docket/common/v1/attempt_pb.js';
import { REPO_ROOT } from './service-process.js';

type Methods = typeof ExecutionService.method;
/** An ExecutionService method name (`claimJobs`, `renewAttempt`, ...). */
export type ExecutionMethod = keyof Methods;
/** The request of `M`, as a test writes it. */
export type RequestOf<M extends ExecutionMethod> = MessageInitShape<Methods[M]['input']>;
/** The response of `M`. */
export type ResponseOf<M extends ExecutionMethod> = MessageShape<Methods[M]['output']>;

/** An attempt's authority as a worker call names it. */
export type AttemptRefInit = MessageInitShape<typeof AttemptRefSchema>;

/** What one call of a raw worker was answered. */
export type RawAnswer<R> =
  | { readonly ok: true; readonly response: R }
  | { readonly ok: false; readonly code: number; readonly reason: string | null };

const FIXTURE = `${REPO_ROOT}/test/support/raw-worker.mjs`;

/** Every raw worker process still alive, killed when the test process exits. */
const alive = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of alive) child.kill('SIGKILL');
});

/** A fresh operation id (`op_` + 128 random bits). */
export function newOperationId(): string {
  return `op_${randomBytes(16).toString('base64url')}`;
}

/** The authority part of an assignment, as worker calls present it. */
export function attemptOf(assignment: Assignment): AttemptRefInit {
  const authority = assignment.authority!;
  return { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation: authority.workerIncarnation };
}

/**
 * A worker in its own OS process (`raw-worker.mjs`) that makes exactly the
 * calls the test asks for and reports each answer, so the test can freeze
 * it (SIGSTOP) past its lease, thaw it, or kill it mid-attempt, as a real
 * worker process would be by a GC pause, a VM migration or the OOM killer.
 */
export class RawWorker {
  readonly #child: ChildProcess;
  readonly #waiting = new Map<number, (answer: RawAnswer<JsonValue>) => void>();
  readonly #exited: Promise<void>;
  #nextId = 1;
  /** The incarnation of the last {@link register}. */
  incarnation = '';

  private constructor(child: ChildProcess) {
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Starts a worker process that talks to `executionUrl` with `token` (role `worker`). */
  static async start(executionUrl: string, token: string): Promise<RawWorker> {
    const child = spawn(process.execPath, [FIXTURE], {
      cwd: REPO_ROOT,
      env: { PATH: process.env['PATH'] ?? '', DOCKET_EXECUTION_URL: executionUrl, DOCKET_WORKER_TOKEN: token },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    alive.add(child);
    child.once('exit', () => alive.delete(child));
    // Writing to a crashed worker fails; the test sees that through its answers.
    child.stdin!.on('error', () => {});
    const worker = new RawWorker(child);
    child.once('exit', () => {
      for (const settle of worker.#waiting.values()) settle({ ok: false, code: -1, reason: 'worker process exited' });
      worker.#waiting.clear();
    });
    const ready = new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`raw worker exited with ${code} before it was ready`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const message = JSON.parse(line) as { ready?: boolean; id?: number } & RawAnswer<JsonValue>;
        if (message.ready) return resolve();
        const settle = worker.#waiting.get(message.id ?? -1);
        worker.#waiting.delete(message.id ?? -1);
        settle?.(message);
      });
    });
    await ready;
    return worker;
  }

  /** The worker's process id. */
  get pid(): number {
    return this.#child.pid!;
  }

  /** Makes one call and resolves with its answer (a refusal is an answer, not a rejection). */
  async call<M extends ExecutionMethod>(
    method: M,
    request: RequestOf<M>,
    timeoutMs?: number,
  ): Promise<RawAnswer<ResponseOf<M>>> {
    const desc = ExecutionService.method[method];
    const id = this.#nextId++;
    const answered = new Promise<RawAnswer<JsonValue>>((resolve) => this.#waiting.set(id, resolve));
    const json = toJson(desc.input, create(desc.input, request as never));
    this.#child.stdin!.write(`${JSON.stringify({ id, method, request: json, timeoutMs })}\n`);
    const answer = await answered;
    if (!answer.ok) return { ok: false, code: answer.code, reason: answer.reason };
    return { ok: true, response: fromJson(desc.output, answer.response) as ResponseOf<M> };
  }

  /** Like {@link call}, but throws on a refusal. */
  async expectOk<M extends ExecutionMethod>(method: M, request: RequestOf<M>): Promise<ResponseOf<M>> {
    const answer = await this.call(method, request);
    if (!answer.ok) throw new Error(`${method} refused: code ${answer.code}, reason ${answer.reason}`);
    return answer.response;
  }

  /** Registers `name` for `queues`; remembers the new incarnation. */
  async register(name: string, queues: string[], maxConcurrency = 1): Promise<ResponseOf<'registerWorker'>> {
    const registered = await this.expectOk('registerWorker', { workerName: name, queues, maxConcurrency });
    this.incarnation = registered.workerIncarnation;
    return registered;
  }

  /** Claims up to `maxJobs` jobs, waiting at most `waitMs`, with a fresh operation id unless one is given. */
  async claim(options: { maxJobs?: number; waitMs?: number; queues?: string[]; operationId?: string } = {}): Promise<Assignment[]> {
    const response = await this.expectOk('claimJobs', {
      workerIncarnation: this.incarnation,
      queues: options.queues ?? [],
      maxJobs: options.maxJobs ?? 1,
      wait: durationFromMs(options.waitMs ?? 0),
      operationId: options.operationId ?? newOperationId(),
    });
    return response.assignments;
  }

  /** Freezes the process (SIGSTOP): it holds its authority but makes no call. */
  freeze(): void {
    this.#child.kill('SIGSTOP');
  }

  /** Resumes a frozen process (SIGCONT). */
  thaw(): void {
    this.#child.kill('SIGCONT');
  }

  /** Kills the process (SIGKILL), as a crash would, and waits for it to be gone. */
  async crash(): Promise<void> {
    this.#child.kill('SIGKILL');
    await this.#exited;
  }

  /** Ends the process after its calls in flight are answered (SIGKILL if that takes over 5 s). */
  async close(): Promise<void> {
    this.#child.kill('SIGCONT');
    this.#child.stdin!.end();
    // Real time: a timeout race, the bound on an orderly close.
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5_000);
    await this.#exited;
    clearTimeout(timer);
  }
}
