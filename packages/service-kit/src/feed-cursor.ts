import { createHash } from 'node:crypto';
import { canonicalJson, openToken, sealToken } from '@docket/contracts';

/**
 * A position in the change feed's total order: the writing transaction's id
 * (`xid8`) and the entry's id, exactly as `docket.state.v1.FeedPosition`
 * carries them, so a state message can be passed as it is.
 */
export interface FeedCursorPosition {
  readonly transactionId: bigint;
  readonly entryId: bigint;
}

/**
 * A change-feed filter in normal form (see {@link normaliseFeedFilter}):
 * statuses as `docket.common.v1.JobStatus` numbers, sorted ascending without
 * duplicates, and the queue (empty means every queue).
 */
export interface FeedCursorFilter {
  readonly statuses: readonly number[];
  readonly queue: string;
}

/** What a feed cursor is bound to besides its position. */
export interface FeedCursorBinding {
  /** The authenticated subject the cursor was issued to. */
  readonly subject: string;
  /** The filter the feed was opened with, normalised. */
  readonly filter: FeedCursorFilter;
}

/**
 * Why a cursor cannot be resumed. The names are those of
 * `docket.events.v1.ResyncReason` without its prefix, so a caller maps one
 * to the other by name.
 */
export type FeedCursorRefusal = 'CURSOR_ABSENT' | 'CURSOR_INVALID' | 'CURSOR_EXPIRED' | 'CURSOR_FOREIGN';

/** The outcome of {@link FeedCursorCodec.open}. */
export type OpenedFeedCursor =
  | { readonly ok: true; readonly position: FeedCursorPosition }
  | { readonly ok: false; readonly refusal: FeedCursorRefusal };

/** How long a feed cursor stays resumable unless configured otherwise: 7 days. */
export const DEFAULT_FEED_CURSOR_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** Marks a token as a feed cursor, so a ListJobs page token (same secret) never opens as one. */
const CURSOR_KIND = 'feed';
const CURSOR_VERSION = 1;
const UINT64_MAX = (1n << 64n) - 1n;
const DECIMAL = /^(0|[1-9][0-9]{0,19})$/;
/** How long a sealed cursor is given again for the same binding and position. */
const REUSE_MS = 1_000;
/** Recently sealed cursors kept at most (all forgotten at once past it: a cache, not a record). */
const RECENT_MAX = 4_096;

/**
 * Puts a change-feed filter into the one form cursors are bound to:
 * statuses deduplicated and sorted, queue as given (empty for every queue).
 * Two filters that select the same jobs in a different spelling bind the
 * same cursors. It does not validate; the caller refuses bad filters first.
 */
export function normaliseFeedFilter(filter: { readonly statuses?: readonly number[]; readonly queue?: string } | undefined): FeedCursorFilter {
  const statuses = [...new Set(filter?.statuses ?? [])].sort((a, b) => a - b);
  return { statuses, queue: filter?.queue ?? '' };
}

/**
 * Change-feed cursors (WatchJobs frames, and the `event_cursor` of GetJob
 * and ListJobs snapshots): opaque, HMAC-SHA256-protected with
 * DOCKET_CURSOR_SECRET ({@link sealToken}), bound to a digest of the
 * subject and to a digest of the normalised filter, carrying the
 * {@link FeedCursorPosition} as decimal strings and an expiry.
 *
 * Opening never throws: the feed answers a cursor it cannot resume with a
 * `resync_required` frame, not an error, so {@link open} says why instead.
 * The subject is stored only as a digest, so a logged or leaked cursor does
 * not name its owner.
 */
export class FeedCursorCodec {
  /** The subject and filter digests of bindings sealed for before (a subscriber passes the same binding for every frame). */
  readonly #digests = new WeakMap<FeedCursorBinding, BindingDigests>();
  /** Cursors sealed in the last {@link REUSE_MS}, by binding digests and position. */
  readonly #recent = new Map<string, { readonly cursor: string; readonly sealedAt: number }>();

  constructor(
    private readonly secret: string,
    private readonly ttlMs: number = DEFAULT_FEED_CURSOR_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * How long a sealed cursor is given out again for the same binding and
   * position: a second, or a tenth of the time to live if that is shorter.
   * A cache of frames carrying cursors keeps each one no longer than this.
   */
  get reuseMs(): number {
    return Math.min(REUSE_MS, this.ttlMs / 10);
  }

  /**
   * The cursor that resumes the feed right after `position`. Every WatchJobs
   * subscriber of one subject and filter passes each entry with the same
   * cursor, so one sealed in the last second (or tenth of the time to
   * live, if shorter) for the same binding and position is given again: it
   * expires at most that much earlier than a fresh one would.
   */
  seal(position: FeedCursorPosition, binding: FeedCursorBinding): string {
    const { sub, f } = this.#digestsOf(binding);
    const tx = position.transactionId.toString();
    const e = position.entryId.toString();
    const key = `${sub}.${f}.${tx}.${e}`;
    const now = this.now();
    const recent = this.#recent.get(key);
    if (recent && now >= recent.sealedAt && now - recent.sealedAt < this.reuseMs) return recent.cursor;
    const cursor = sealToken({ k: CURSOR_KIND, v: CURSOR_VERSION, sub, f, tx, e, exp: now + this.ttlMs }, this.secret);
    if (this.#recent.size >= RECENT_MAX) this.#recent.clear();
    this.#recent.set(key, { cursor, sealedAt: now });
    return cursor;
  }

  /**
   * The position a cursor resumes after, if it was sealed with this secret
   * for this subject and filter and has not expired. An empty cursor is
   * `CURSOR_ABSENT`; a malformed or altered one, or one minted for another
   * filter, `CURSOR_INVALID`; one minted for another subject
   * `CURSOR_FOREIGN`; an expired one `CURSOR_EXPIRED`, checked last so that
   * an old foreign cursor is still reported as foreign.
   */
  open(cursor: string, binding: FeedCursorBinding): OpenedFeedCursor {
    if (cursor === '') return { ok: false, refusal: 'CURSOR_ABSENT' };
    const body = openToken(cursor, this.secret);
    if (
      !body ||
      body['k'] !== CURSOR_KIND ||
      body['v'] !== CURSOR_VERSION ||
      typeof body['sub'] !== 'string' ||
      typeof body['f'] !== 'string' ||
      typeof body['exp'] !== 'number'
    ) {
      return { ok: false, refusal: 'CURSOR_INVALID' };
    }
    const transactionId = parseUint64(body['tx']);
    const entryId = parseUint64(body['e']);
    if (transactionId === undefined || entryId === undefined) return { ok: false, refusal: 'CURSOR_INVALID' };
    const { sub, f } = this.#digestsOf(binding);
    if (body['sub'] !== sub) return { ok: false, refusal: 'CURSOR_FOREIGN' };
    if (body['f'] !== f) return { ok: false, refusal: 'CURSOR_INVALID' };
    if (body['exp'] < this.now()) return { ok: false, refusal: 'CURSOR_EXPIRED' };
    return { ok: true, position: { transactionId, entryId } };
  }

  #digestsOf(binding: FeedCursorBinding): BindingDigests {
    let digests = this.#digests.get(binding);
    if (!digests) {
      digests = { sub: subjectDigest(binding.subject), f: filterDigest(binding.filter) };
      this.#digests.set(binding, digests);
    }
    return digests;
  }
}

/** What a cursor body holds of its binding. */
interface BindingDigests {
  readonly sub: string;
  readonly f: string;
}

function parseUint64(value: unknown): bigint | undefined {
  if (typeof value !== 'string' || !DECIMAL.test(value)) return undefined;
  const parsed = BigInt(value);
  return parsed <= UINT64_MAX ? parsed : undefined;
}

function subjectDigest(subject: string): string {
  return digest(`docket.feed-cursor.subject\u0000${subject}`);
}

function filterDigest(filter: FeedCursorFilter): string {
  const normal = normaliseFeedFilter(filter);
  return digest(`docket.feed-cursor.filter\u0000${canonicalJson({ statuses: [...normal.statuses], queue: normal.queue })}`);
}

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url');
}
