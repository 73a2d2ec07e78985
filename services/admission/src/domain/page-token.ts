import { createHash } from 'node:crypto';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { DocketError, canonicalJson, openToken, sealToken, type JsonValue } from '@docket/contracts';

/** Where the next ListJobs page starts, and what it is bound to. */
export interface PagePosition {
  /** The first page's MVCC snapshot (pg_snapshot text). */
  readonly snapshot: string;
  readonly createdAt: Date;
  readonly jobId: string;
}

/** What a page token is bound to besides its position. */
export interface PageBinding {
  readonly subject: string;
  /** The listing's filter as proto3 JSON; compared canonically. */
  readonly filter: JsonValue;
}

/**
 * ListJobs page tokens: opaque, HMAC-protected (DOCKET_CURSOR_SECRET) and
 * bound to the subject, the filter and the first page's snapshot.
 */
export class PageTokenCodec {
  constructor(
    private readonly secret: string,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seals the position after the last job of a page. */
  seal(position: PagePosition, binding: PageBinding): string {
    return sealToken(
      {
        v: 1,
        sub: binding.subject,
        f: filterDigest(binding.filter),
        snap: position.snapshot,
        t: position.createdAt.getTime(),
        id: position.jobId,
        exp: this.now() + this.ttlMs,
      },
      this.secret,
    );
  }

  /**
   * Opens a token for the same subject and filter. Altered, foreign or
   * mismatched tokens are INVALID_ARGUMENT, reason CURSOR_INVALID; expired
   * ones CURSOR_EXPIRED. Neither says which check failed.
   */
  open(token: string, binding: PageBinding): PagePosition {
    const body = openToken(token, this.secret);
    if (
      !body ||
      body['v'] !== 1 ||
      body['sub'] !== binding.subject ||
      body['f'] !== filterDigest(binding.filter) ||
      typeof body['snap'] !== 'string' ||
      typeof body['t'] !== 'number' ||
      typeof body['id'] !== 'string' ||
      typeof body['exp'] !== 'number'
    ) {
      throw new DocketError('CURSOR_INVALID', 'the page token is not valid for this request', {
        fieldViolations: [{ field: 'page_token', description: 'is not a page token issued for this subject and filter' }],
      });
    }
    if (body['exp'] < this.now()) {
      throw new DocketError('CURSOR_EXPIRED', 'the page token has expired; start the listing again', {
        fieldViolations: [{ field: 'page_token', description: 'has expired' }],
      });
    }
    return { snapshot: body['snap'], createdAt: new Date(body['t']), jobId: body['id'] };
  }

  /**
   * The next page's token of a snapshot-free keyset listing (schedules,
   * workers): sealed after `last` (its time and id) when more follow, else
   * empty.
   */
  nextAfter(hasMore: boolean, last: { readonly at: Timestamp | undefined; readonly id: string } | undefined, binding: PageBinding): string {
    if (!hasMore || !last?.at) return '';
    return this.seal({ snapshot: '', createdAt: timestampDate(last.at), jobId: last.id }, binding);
  }
}

function filterDigest(filter: JsonValue): string {
  return createHash('sha256').update(canonicalJson(filter)).digest('base64url');
}
