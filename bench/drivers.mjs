// Where each system's driver lives. A driver module exports
// `prepare(databaseUrl)`, run once by the orchestrator before any
// measurement (schemas), and `open(system, {connections})`, run in a
// generator process, resolving with
//   { options, submitter(queue, shape), seed(queue, count, prefix),
//     consumer(queue, total, spec) -> {run()}, close() }.
const MODULES = {
  handwritten: './peers/handwritten.mjs',
  pgboss: './peers/pgboss.mjs',
  graphile: './peers/graphile.mjs',
  docket: './docket/driver.mjs',
};

/** The driver module for a system kind. */
export function loadDriver(kind) {
  const path = MODULES[kind];
  if (!path) throw new Error(`no driver for system kind ${kind}`);
  return import(path);
}
