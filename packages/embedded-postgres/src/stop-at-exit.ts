/**
 * Where the process keeps the stops {@link stopAtExit} runs: on `process`
 * itself, because a process may load this module more than once (vitest
 * evaluates it again for each isolated test file; a test may load both the
 * sources and the built package), and every copy must share the one exit
 * listener rather than add its own.
 */
const STOPS = Symbol.for('@docket/embedded-postgres/stop-at-exit');

/**
 * Registers `stop` to run as this process exits, whatever way it ends (an
 * uncaught error, `process.exit`, a failed test file), so that no child it
 * started outlives it: the service processes and nginx front of `docket
 * dev` and the test clusters, and Postgres, which runs in its own process
 * group where nothing else would stop it. `stop` runs synchronously (an
 * exit listener cannot wait): it signals the child and does not wait for
 * it. Returns the function that withdraws `stop`, for when the child has
 * exited or was stopped in order.
 *
 * However many children are registered, the process has one `exit` listener.
 */
export function stopAtExit(stop: () => void): () => void {
  const stops = exitStops();
  // A wrapper of its own, so that registering one function twice makes two stops.
  const entry = (): void => stop();
  stops.add(entry);
  return () => {
    stops.delete(entry);
  };
}

/** The process's set of stops; the first call adds the `exit` listener that runs them. */
function exitStops(): Set<() => void> {
  const holder = process as unknown as Record<symbol, Set<() => void> | undefined>;
  let stops = holder[STOPS];
  if (stops === undefined) {
    const created = new Set<() => void>();
    process.once('exit', () => {
      for (const each of created) each();
    });
    holder[STOPS] = stops = created;
  }
  return stops;
}
