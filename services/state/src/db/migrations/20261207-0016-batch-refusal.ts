import type { Migration } from './migration.js';

/**
 * The checks a batch's write statement makes before its transaction may
 * commit, made by the statement itself: a journal whose stored head is not
 * the one the batch chained after (SQLSTATE DKJ01, the job id as detail),
 * and an operation id a concurrent call recorded first (DKO01). Raised
 * inside the statement, they stop a COMMIT sent in the same round trip
 * (`runAndCommit`), which a check in the service after the statement's
 * answer no longer could.
 */
export const batchRefusal: Migration = {
  id: '20261207-0016-batch-refusal',
  creates: [],
  sql: `
create function docket_refuse_unwritten_batch(corrupt json, recorded bigint, expected bigint) returns void language plpgsql as $fn$
begin
  if json_array_length(corrupt) > 0 then
    raise exception using errcode = 'DKJ01', message = 'a journal head is not the one the batch chained after', detail = corrupt ->> 0;
  end if;
  if recorded < expected then
    raise exception using errcode = 'DKO01', message = 'an operation id was recorded by a concurrent call';
  end if;
end
$fn$;
`,
};
