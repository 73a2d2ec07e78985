// The results on disk, in the results directory: the last run whole
// (`last-run.json`: settings, machine, every repetition's raw figures,
// medians, ratios, goals; `last-run.md`: its tables; `last-run.svg`: its
// chart), the latest figures of every case any run measured
// (`latest.md`, `latest.json`: a run of some scenarios replaces only
// theirs), and one line per case and run in `history.csv`, appended.
// Earlier runs' whole files are in git history.
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderChart } from './chart.mjs';
import { caseKey } from './summary.mjs';
import { renderMarkdown } from './tables.mjs';

/** The columns of history.csv, in order. */
const HISTORY_COLUMNS = ['date', 'run', 'quick', 'scenario', 'system', 'case', 'callers', 'jobs', 'reps', 'jobs_per_s', 'p50_ms', 'p99_ms', 'cpu_us_per_job', 'docket_services_cpu_us_per_job'];

/** One CSV field: quoted when it holds a comma, a quote or a line break. */
function csvField(value) {
  const text = value === undefined || value === null ? '' : String(value);
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A row's line of history.csv. */
function historyLine(run, row) {
  const cpuAll = row.cpuUsPerJob ? Object.values(row.cpuUsPerJob).reduce((sum, value) => sum + value, 0) : undefined;
  const round = (value, digits) => (value === undefined || value === null || !Number.isFinite(value) ? '' : Number(value.toFixed(digits)));
  return [run.date, run.runId, run.quick, row.scenario, row.system, row.label, row.callers, row.jobs, row.reps, round(row.jobsPerSecond, 1), round(row.p50Ms, 2), round(row.p99Ms, 2), round(cpuAll, 0), round(row.serviceCpuUsPerJob, 0)]
    .map(csvField)
    .join(',');
}

/** The latest figures of every case: what `latest.json` held, with this run's cases replaced. */
function mergedLatest(path, run) {
  const latest = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : {};
  for (const row of run.rows) latest[caseKey(row)] = { date: run.date, run: run.runId, command: run.command, row };
  return latest;
}

/** latest.md: every case's latest figures, with the run they come from. */
function latestMarkdown(latest) {
  const entries = Object.values(latest);
  const integer = (value) => (value === undefined || value === null ? '-' : Math.round(value).toLocaleString('en-US'));
  const ms = (value) => (value === undefined || value === null ? '-' : value.toFixed(2));
  return renderMarkdown({
    title: 'Latest figures of every case (each from the last run that measured it; compare ratios within one run only)',
    headers: ['scenario', 'system', 'case', 'jobs/s', 'p50 ms', 'p99 ms', 'Docket services CPU us/job', 'date', 'run'],
    numeric: [3, 4, 5, 6],
    rows: entries.map(({ date, run, row }) => [row.group, row.systemName, row.label, integer(row.jobsPerSecond), ms(row.p50Ms), ms(row.p99Ms), integer(row.serviceCpuUsPerJob), date, run]),
  });
}

/** Markdown: what was run, on what, then every table. */
function markdown(run, tables) {
  const settings = Object.entries(run.postgres.settings).map(([name, value]) => `${name}=${value}`).join(', ');
  return [
    `# Docket benchmark, ${run.date}`,
    '',
    `- command: \`${run.command}\``,
    `- mode: ${run.quick ? 'quick' : 'full'}, ${run.reps} repetition(s), ${run.sizes.jobs} jobs per measurement; large backlog ${run.sizes.backlogLarge.toLocaleString('en-US')} jobs${run.quick ? ' (quick mode: the full run uses 200,000)' : ''}`,
    `- machine: ${run.machine.cpus} CPUs (${run.machine.cpuModel}), ${run.machine.memoryGiB} GiB, ${run.machine.platform}, Node ${run.machine.node}; load average ${run.loadAverage.start.join(' / ')} at start, ${run.loadAverage.end.join(' / ')} at end`,
    `- PostgreSQL: ${settings}`,
    `- Docket from ${run.roots.docket}${run.roots['docket-baseline'] ? `; baseline from ${run.roots['docket-baseline']}` : ''}`,
    `- wall time ${(run.wallMs / 1000).toFixed(0)} s`,
    '',
    'Ratios compare rows of this run only. Chart: the .svg file of the same name.',
    '',
    ...tables.flatMap((table) => [renderMarkdown(table), '']),
  ].join('\n');
}

/**
 * The extra benchmarks' tables: each entry rows (objects of any shape) of
 * an in-process benchmark, or `{title, rows}` of a scenario with tables of
 * its own (fixed-rate).
 */
export function extraTables(extras) {
  return Object.entries(extras).map(([name, entry]) => {
    const { title, rows } = Array.isArray(entry) ? { title: `${name} (in-process)`, rows: entry } : entry;
    const headers = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    return { title, headers, numeric: [], rows: rows.map((row) => headers.map((header) => String(row[header] ?? ''))) };
  });
}

/** Writes the last run's three files, the latest figures per case and a line per case in the history; returns their paths. */
export function writeResults(outDir, run, tables) {
  mkdirSync(outDir, { recursive: true });
  const paths = {
    json: join(outDir, 'last-run.json'),
    markdown: join(outDir, 'last-run.md'),
    chart: join(outDir, 'last-run.svg'),
    latest: join(outDir, 'latest.md'),
    history: join(outDir, 'history.csv'),
  };
  writeFileSync(paths.json, `${JSON.stringify(run, (_, value) => (typeof value === 'bigint' ? String(value) : value), 2)}\n`);
  writeFileSync(paths.markdown, markdown(run, [...tables, ...extraTables(run.extras)]));
  writeFileSync(paths.chart, renderChart(run.rows, `Docket benchmark ${run.date}: jobs/s, medians of ${run.reps} rep(s); bars scaled within each block`));
  const latestJson = join(outDir, 'latest.json');
  const latest = mergedLatest(latestJson, run);
  writeFileSync(latestJson, `${JSON.stringify(latest, null, 2)}\n`);
  writeFileSync(paths.latest, `# Docket benchmark: latest figures\n\n${latestMarkdown(latest)}\n`);
  if (!existsSync(paths.history)) writeFileSync(paths.history, `${HISTORY_COLUMNS.join(',')}\n`);
  if (run.rows.length > 0) appendFileSync(paths.history, `${run.rows.map((row) => historyLine(run, row)).join('\n')}\n`);
  return paths;
}
