// Backlog replay, as the streams benchmark and bench/profile-replay.mjs
// measure it: a journal written through the state service, streamed back
// through StreamJobEvents from sequence 0, next to a bare keyset SELECT of
// the same rows.

/** Appends `events` `worker.step` events to `jobId`'s journal through the state service, 64 a call. */
export async function writeBacklog(state, caller, jobId, events) {
  for (let written = 0; written < events; written += 64) {
    const batch = Math.min(64, events - written);
    await state.transitionJob({
      caller,
      jobId,
      events: Array.from({ length: batch }, (_, n) => ({ type: 'worker.step', payload: { n: written + n, note: 'x'.repeat(100) } })),
    });
  }
}

/**
 * `vacuum analyze` through `client` (a connected node-postgres client), as
 * the streams benchmark runs it once the backlog is written: the planner
 * then knows the journal's size, and the bare keyset SELECT walks
 * `job_events_pkey` in order instead of a bitmap scan and sort of every
 * row after its cursor (in one pair of unprofiled `profile-replay.mjs`
 * runs, 88,947 rows/s without it and 157,158 with it; the replay, whose
 * reads walk the index either way, 42,726 and 42,798 events/s).
 */
export async function settleBacklog(client) {
  await client.query('vacuum analyze');
}

/** Events per second of StreamJobEvents from sequence 0 until the page holding sequence `latest`. */
export async function replayRate(events, jobId, latest) {
  const abort = new AbortController();
  const started = performance.now();
  try {
    for await (const frame of events.streamJobEvents({ jobId }, { signal: abort.signal })) {
      if (frame.frame.case === 'page' && frame.frame.value.events.at(-1)?.sequence === latest) break;
    }
    return (Number(latest) / (performance.now() - started)) * 1000;
  } finally {
    abort.abort();
  }
}

/**
 * Rows per second of a bare keyset read of `jobId`'s `latest` journal rows
 * (all columns, pages of 256, a named prepared statement) on `reader`, a
 * connected node-postgres client.
 */
export async function keysetSelectRate(reader, jobId, latest) {
  const started = performance.now();
  let rows = 0;
  let cursor = 0;
  for (;;) {
    const page = await reader.query({
      name: 'bench-keyset',
      text: 'select job_id, sequence, type, payload, occurred_at, attempt_id, fence, previous_hash, hash from job_events where (job_id, sequence) > ($1, $2) and job_id = $1 order by job_id, sequence limit 256',
      values: [jobId, cursor],
    });
    rows += page.rows.length;
    if (page.rows.length < 256) break;
    cursor = page.rows.at(-1).sequence;
  }
  if (rows !== Number(latest)) throw new Error(`the keyset SELECT read ${rows} rows, expected ${latest}`);
  return (rows / (performance.now() - started)) * 1000;
}
