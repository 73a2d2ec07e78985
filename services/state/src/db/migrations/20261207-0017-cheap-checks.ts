import type { Migration } from './migration.js';

/**
 * The same CHECK constraints on digests, hashes and keys, stated without
 * a bounded repetition. PostgreSQL builds a regular expression's DFA
 * states afresh on every match, and `^[0-9a-f]{64}$` needs one per
 * character: about 11 us per row on this machine, against 2 us for a byte
 * length and a search for any character outside the set (100,000 rows:
 * 1,094 ms against 213). A job row's update checks its `head_hash` and
 * `request_digest` each time, four times over a claim and a completion,
 * and its admission writes three: 6% of PostgreSQL's CPU under claims
 * (`perf` of the floor's claims). The new forms accept exactly what the
 * old ones did: every character of the set is one byte, so a byte length
 * of 64 (or 1 to 128) with no character outside the set is 64 (or 1 to
 * 128) of them. The names stay. Replacing a constraint validates it on
 * every existing row, under the table's lock, once.
 */
export const cheapChecks: Migration = {
  id: '20261207-0017-cheap-checks',
  creates: [],
  sql: `
alter table jobs
  drop constraint jobs_head_hash_check,
  add constraint jobs_head_hash_check check (octet_length(head_hash) = 64 and head_hash !~ '[^0-9a-f]'),
  drop constraint jobs_request_digest_check,
  add constraint jobs_request_digest_check check (octet_length(request_digest) = 64 and request_digest !~ '[^0-9a-f]'),
  drop constraint jobs_unique_key_check,
  add constraint jobs_unique_key_check check (octet_length(unique_key) between 1 and 128 and unique_key !~ '[^!-~]'),
  drop constraint jobs_concurrency_key_check,
  add constraint jobs_concurrency_key_check check (octet_length(concurrency_key) between 1 and 128 and concurrency_key !~ '[^!-~]');
alter table idempotency_records
  drop constraint idempotency_records_request_digest_check,
  add constraint idempotency_records_request_digest_check check (octet_length(request_digest) = 64 and request_digest !~ '[^0-9a-f]');
`,
};
