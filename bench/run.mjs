// `npm run bench`: Docket side by side with hand-written node-postgres,
// pg-boss 10.4 and graphile-worker 0.17, in one run on one durable
// PostgreSQL. This process only orchestrates: it starts the server and the
// Docket service processes (and reads their logs); every measurement's load
// runs in forked generator processes (bench/generators/). Systems are
// interleaved within each repetition and the report gives medians and
// ratios between rows of this run. See docs/benchmarks.md.
import { randomBytes } from 'node:crypto';
import { runGenerators } from './generator-host.mjs';
import { loadAverage, machineInfo } from './machine.mjs';
import { measureCase } from './measure.mjs';
import { parseOptions, USAGE } from './options.mjs';
import { backlogPrefills, BACKLOG_QUEUE, buildScenarios, DEFAULT_SCENARIOS, EXTRA_SCENARIOS, inRepetitionOrder, sizesFor, SYSTEM_NAMES } from './plan.mjs';
import { startDurablePostgres } from './postgres.mjs';
import { goalRows, ratioRows } from './report/comparisons.mjs';
import { extraTables, writeResults } from './report/files.mjs';
import { cpuTable } from './report/cpu-per-job.mjs';
import { summarize } from './report/summary.mjs';
import { goalsTable, ratiosTable, renderText, resultsTable } from './report/tables.mjs';
import { resetStatements, statementsTable, topStatements } from './statements.mjs';
import { startSystems } from './systems.mjs';

const EXTRAS = {
  calls: async (options) => (await import('./calls.mjs')).benchCalls(options),
  journal: async (options) => (await import('./journal.mjs')).benchJournal(options),
  streams: async (options) => (await import('./streams.mjs')).benchStreams(options),
  reaper: async (options) => (await import('./reaper.mjs')).benchReaper(options),
  wakeups: async (options) => (await import('./wakeups.mjs')).benchWakeups(options),
  renewals: async (options) => (await import('./renewals.mjs')).benchRenewals(options),
  'queue-stats': async (options) => (await import('./queue-stats.mjs')).benchQueueStats(options),
  dependencies: async (options) => (await import('./dependencies.mjs')).benchDependencies(options),
  'fixed-rate': async (options) => (await import('./fixed-rate.mjs')).benchFixedRate(options),
  replicas: async (options) => (await import('./replicas.mjs')).benchReplicas(options),
};
/** The extras that fork load generators rather than run in this process. */
const FORKING_EXTRAS = ['fixed-rate', 'replicas'];

/**
 * An extra resolves with its table's rows (an in-process benchmark) or with
 * `{rows, tables}` (fixed-rate, replicas): summary rows that join the run's results,
 * CPU, ratio and goal tables and the history, and tables of its own.
 */
const extraOutcome = (name, outcome) => (Array.isArray(outcome) ? { rows: [], tables: { [name]: outcome } } : outcome);

const options = parseOptions(process.argv.slice(2));
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}

// Ctrl-C or SIGTERM: exit, and the exit hooks of the service launcher and
// the embedded PostgreSQL stop what this process started; generator
// processes exit when their channel closes.
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

const began = performance.now();
const runId = randomBytes(3).toString('hex');
const loadAtStart = loadAverage();
const sizes = sizesFor(options);
const roots = {
  docket: options.docketRoot,
  ...(options.oneProcess ? { 'docket-one': options.docketRoot } : {}),
  ...(options.baselineRoot ? { 'docket-baseline': options.baselineRoot } : {}),
};
const docketSystems = Object.keys(roots);
const scenarios = buildScenarios(sizes, docketSystems);
const measured = DEFAULT_SCENARIOS.filter((name) => options.scenarios.includes(name));
const extras = EXTRA_SCENARIOS.filter((name) => options.scenarios.includes(name));
const groups = measured.flatMap((scenario) => scenarios[scenario].map((group) => ({ ...group, scenario })));
const instances = [...new Set(groups.flatMap((group) => group.cases.map((testCase) => testCase.instance ?? testCase.system)))];
const elapsed = () => `${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s`;

console.log(`bench ${runId}: ${options.quick ? 'quick, ' : ''}${options.reps} rep(s), ${sizes.jobs} jobs per measurement; scenarios ${options.scenarios.join(', ')}`);
if (options.quick && measured.includes('backlog')) {
  console.log(`quick mode: the "large" backlog is ${sizes.backlogLarge.toLocaleString('en-US')} queued jobs (200,000 in a full run)`);
}

const server = await startDurablePostgres();
console.log(`PostgreSQL ${Object.entries(server.settings).map(([name, value]) => `${name}=${value}`).join(' ')}`);
let systems;
const measurements = [];
const extraRows = {};
const extraSummaryRows = [];
const statements = {};
let complaints = {};
try {
  systems = await startSystems(server, instances, roots);
  if (instances.length > 0) console.log(`${elapsed()}  systems up: ${instances.join(', ')}`);

  for (const { instance, count } of backlogPrefills(sizes, instances)) {
    const [seeded] = await runGenerators([
      { script: 'seed.mjs', config: { system: systems.connect(instance), queue: BACKLOG_QUEUE, count, keyPrefix: `${runId}-prefill` } },
    ]);
    const seconds = (seeded.endedAt - seeded.startedAt) / 1000;
    console.log(`${elapsed()}  ${instance}: prefilled ${count.toLocaleString('en-US')} jobs in ${seconds.toFixed(1)} s (${Math.round(count / seconds)}/s)`);
  }
  const docketDatabases = systems.docketDeployments().filter((deployment) => !deployment.instance.includes('@'));
  if (options.statements && server.pgStatStatements && docketDatabases.length > 0) await resetStatements(docketDatabases[0].databaseUrl);

  let sequence = 0;
  for (let rep = 1; rep <= options.reps; rep += 1) {
    for (const group of groups) {
      for (const testCase of inRepetitionOrder(group.cases, rep)) {
        sequence += 1;
        const context = {
          connect: systems.connect,
          queue: () => `${group.key}-r${rep}-${sequence}-${runId}`,
          keyPrefix: `${runId}-${group.key}-r${rep}-${sequence}`,
        };
        const identity = { scenario: group.scenario, group: group.name, groupKey: group.key, system: testCase.system, label: testCase.label, callers: testCase.callers, jobs: testCase.jobs, rep };
        const name = `rep ${rep}  ${group.name}  ${SYSTEM_NAMES[testCase.system]}: ${testCase.label}`;
        const servicePids = systems.pidsOf(testCase.instance ?? testCase.system);
        measurements.push(await measureCase({ testCase, context, identity, name, servicePids, prefix: elapsed }));
      }
    }
  }

  if (options.statements) {
    if (!server.pgStatStatements) console.log('--statements: the embedded PostgreSQL does not ship pg_stat_statements');
    for (const deployment of docketDatabases) {
      statements[deployment.instance] = await topStatements(deployment.databaseUrl);
      console.log(`\n${renderText(statementsTable(`Top statements by total time, database of ${SYSTEM_NAMES[deployment.instance]} (${deployment.root})`, statements[deployment.instance]))}`);
    }
  }

  for (const extra of extras) {
    console.log(`${elapsed()}  ${extra}${FORKING_EXTRAS.includes(extra) ? '' : ' (in-process)'}`);
    const keep = (outcome) => {
      const { rows: summaryRows, tables } = extraOutcome(extra, outcome);
      extraSummaryRows.push(...summaryRows);
      Object.assign(extraRows, tables);
      console.log(`\n${extraTables(tables).map(renderText).join('\n\n')}\n`);
    };
    try {
      keep(await EXTRAS[extra]({ server, root: options.docketRoot, roots, quick: options.quick, reps: options.reps, jobs: options.jobs }));
    } catch (error) {
      // A benchmark that stopped early may still hand back what it measured.
      if (error.rows ?? error.outcome) keep(error.rows ?? error.outcome);
      measurements.push({ scenario: extra, error: error.stack ?? String(error) });
      console.log(`${elapsed()}  ${extra}: FAILED ${String(error.message ?? error).split('\n').slice(0, 6).join(' | ')}`);
    }
  }
} finally {
  // Complaints while the systems ran; what they log as they are stopped is shutdown noise.
  complaints = Object.fromEntries((systems?.docketDeployments() ?? []).map((deployment) => [deployment.instance, deployment.complaints]));
  await systems?.stop();
  await server.stop();
}

const rows = [...summarize(measurements.filter((measurement) => !measurement.error)), ...extraSummaryRows];
const ratios = ratioRows(rows);
const goals = goalRows(rows);
const tables = rows.length > 0 ? [resultsTable(rows), cpuTable(rows), ratiosTable(ratios), goalsTable(goals, docketSystems)] : [];
const run = {
  date: new Date().toISOString().slice(0, 10),
  runId,
  command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
  quick: options.quick,
  reps: options.reps,
  scenarios: options.scenarios,
  sizes,
  roots,
  machine: machineInfo(),
  loadAverage: { start: loadAtStart, end: loadAverage() },
  wallMs: performance.now() - began,
  postgres: { settings: server.settings, pgStatStatements: server.pgStatStatements },
  failures: measurements.filter((measurement) => measurement.error),
  serviceComplaints: complaints,
  measurements: measurements.filter((measurement) => !measurement.error),
  rows,
  ratios,
  goals,
  extras: extraRows,
  statements,
};
for (const table of tables) console.log(`\n${renderText(table)}`);
if (rows.length > 0 || extras.length > 0) {
  const paths = writeResults(options.outDir, run, tables);
  console.log(`\nwrote ${Object.values(paths).join('\n      ')}`);
}
const complaintCount = Object.values(complaints).reduce((sum, list) => sum + list.length, 0);
console.log(`wall time ${(run.wallMs / 1000).toFixed(1)} s; load average ${run.loadAverage.start.join('/')} -> ${run.loadAverage.end.join('/')}; service warnings/errors logged: ${complaintCount}; failed measurements: ${run.failures.length}`);
if (run.failures.length > 0) process.exitCode = 1;
// Everything is stopped and written; a client library's idle handle must not keep the run alive.
process.exit(process.exitCode ?? 0);
