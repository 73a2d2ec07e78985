// The results of a run on disk: `<date>.json` (settings, machine, every
// repetition's raw figures, medians, ratios, goals), `<date>.md` (the
// tables) and `<date>.svg` (the chart), in the results directory.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderChart } from './chart.mjs';
import { renderMarkdown } from './tables.mjs';

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

/** The older in-process benchmarks' rows (objects of any shape) as tables. */
export function extraTables(extras) {
  return Object.entries(extras).map(([name, rows]) => {
    const headers = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    return { title: `${name} (in-process)`, headers, numeric: [], rows: rows.map((row) => headers.map((header) => String(row[header] ?? ''))) };
  });
}

/** Writes the three files; returns their paths. */
export function writeResults(outDir, run, tables) {
  mkdirSync(outDir, { recursive: true });
  const base = join(outDir, run.date);
  const paths = { json: `${base}.json`, markdown: `${base}.md`, chart: `${base}.svg` };
  writeFileSync(paths.json, `${JSON.stringify(run, (_, value) => (typeof value === 'bigint' ? String(value) : value), 2)}\n`);
  writeFileSync(paths.markdown, markdown(run, [...tables, ...extraTables(run.extras)]));
  writeFileSync(paths.chart, renderChart(run.rows, `Docket benchmark ${run.date}: jobs/s, medians of ${run.reps} rep(s); bars scaled within each block`));
  return paths;
}
