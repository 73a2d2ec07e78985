import { toJson } from '@bufbuild/protobuf';
import type { JobWatchFrame } from '@docket/client';
import { EventSchema } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { ProgressSchema, type Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import type { CliContext } from './command.js';
import { formatProgress, statusName } from './job-summary.js';

/** How `docket watch` writes: lines for people (a bar redrawn in place on a terminal), or JSON lines for programs. */
export type WatchOutputMode = 'text' | 'terminal' | 'json';

/** Cells of the progress bar between its brackets. */
const BAR_WIDTH = 24;

/** Moves to the start of the line and erases it (ANSI CR + EL). */
const ERASE_LINE = '\r\x1b[K';

/**
 * `[#########---------------] 3/8 37%` and the message: the single line
 * `docket watch` redraws on a terminal. An unknown total (0) has no bar.
 */
export function formatProgressBar(progress: Progress): string {
  if (progress.totalUnits <= 0n) return `progress ${formatProgress(progress)}`;
  const done = progress.completedUnits < 0n ? 0n : progress.completedUnits > progress.totalUnits ? progress.totalUnits : progress.completedUnits;
  const filled = Number((done * BigInt(BAR_WIDTH)) / progress.totalUnits);
  const percent = Number((done * 100n) / progress.totalUnits);
  const message = progress.message === '' ? '' : ` ${JSON.stringify(progress.message)}`;
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${progress.completedUnits}/${progress.totalUnits} ${percent}%${message}`;
}

/**
 * The last line of a watch: `job <job_id> ended <STATUS>`, then the
 * failure (class and message) when there is one, or the result of a
 * success.
 */
export function formatWatchEnd(job: Job): string {
  let detail = '';
  if (job.failure) {
    const failureClass = FailureClass[job.failure.failureClass] ?? String(job.failure.failureClass);
    detail = `: ${failureClass}${job.failure.message === '' ? '' : ` ${JSON.stringify(job.failure.message)}`}`;
  } else if (job.result) {
    detail = `, result ${JSON.stringify(job.result)}`;
  }
  return `job ${job.id} ended ${statusName(job.status)}${detail}\n`;
}

/**
 * Writes a watch's frames as they arrive. Events are one line each,
 * `<sequence> <type>`. Progress is a line `progress 3/10` per report, or
 * on a terminal one bar rewritten in place, which stays below the events
 * (erased before an event line, drawn again after it). In JSON mode each
 * frame is one line, `{"event": Event}` or `{"progress": Progress}` in
 * proto3 JSON, and the end `{"job": Job}`.
 */
export class WatchPrinter {
  readonly #mode: WatchOutputMode;
  readonly #context: CliContext;
  /** The bar on screen, if any (terminal mode). */
  #bar: string | undefined;

  constructor(mode: WatchOutputMode, context: CliContext) {
    this.#mode = mode;
    this.#context = context;
  }

  /** Writes one frame. */
  frame(frame: JobWatchFrame): void {
    const out = this.#context.out;
    if (this.#mode === 'json') {
      out(
        frame.kind === 'event'
          ? `${JSON.stringify({ event: toJson(EventSchema, frame.event) })}\n`
          : `${JSON.stringify({ progress: toJson(ProgressSchema, frame.progress) })}\n`,
      );
      return;
    }
    if (frame.kind === 'progress') {
      if (this.#mode === 'text') {
        out(`progress ${formatProgress(frame.progress)}\n`);
        return;
      }
      this.#bar = formatProgressBar(frame.progress);
      out(`${ERASE_LINE}${this.#bar}`);
      return;
    }
    const line = `${frame.event.sequence} ${frame.event.type}\n`;
    out(this.#bar === undefined ? line : `${ERASE_LINE}${line}${this.#bar}`);
  }

  /** Ends the bar's line, if one is on screen, so that what follows starts on a line of its own. */
  finishLine(): void {
    if (this.#bar === undefined) return;
    this.#context.out('\n');
    this.#bar = undefined;
  }

  /** Writes the job as it ended (see {@link formatWatchEnd}), after finishing the bar's line. */
  end(job: Job): void {
    this.finishLine();
    this.#context.out(this.#mode === 'json' ? `${JSON.stringify({ job: toJson(JobSchema, job) })}\n` : formatWatchEnd(job));
  }
}
