// The three tables of a run (every row; the ratios; the goals) as plain
// data, and two renderings of a table: aligned text for the console and
// GitHub markdown for the results file.
import { SYSTEM_NAMES } from '../plan.mjs';

const integer = (value) => (value === undefined || value === null ? '-' : Math.round(value).toLocaleString('en-US'));
const ms = (value) => (value === undefined || value === null ? '-' : Number.isFinite(value) ? value.toFixed(2) : 'never');
const times = (value) => (value === undefined || !Number.isFinite(value) ? '-' : `${value.toFixed(2)}x`);

/** Every measured row: medians over repetitions. */
export function resultsTable(rows) {
  return {
    title: 'Results (medians over repetitions)',
    headers: ['scenario', 'system', 'case', 'callers', 'jobs', 'reps', 'jobs/s', 'p50 ms', 'p99 ms'],
    numeric: [3, 4, 5, 6, 7, 8],
    rows: rows.map((row) => [row.group, row.systemName, row.label, String(row.callers), integer(row.jobs), String(row.reps), integer(row.jobsPerSecond), ms(row.p50Ms), ms(row.p99Ms)]),
  };
}

/** Docket / each other row of its group. */
export function ratiosTable(ratios) {
  return {
    title: 'Ratios (Docket / hand-written SQL, Docket / each peer; jobs/s, and p99 where both have one)',
    headers: ['scenario', 'Docket row', 'divided by', 'Docket jobs/s', 'other jobs/s', 'ratio', 'p99 ratio'],
    numeric: [3, 4, 5, 6],
    rows: ratios.map((ratio) => [ratio.group, ratio.docket, ratio.versus, integer(ratio.docketJobsPerSecond), integer(ratio.versusJobsPerSecond), times(ratio.ratio), times(ratio.p99Ratio)]),
  };
}

/** A goal's figure without a ratio, in its unit (a recovery that never came is Infinity). */
function ownFigure({ value, unit }) {
  if (!Number.isFinite(value)) return 'never';
  if (unit === 'x') return times(value);
  if (unit === 'ms') return `${value.toFixed(1)} ms`;
  if (unit === 's') return `${value} s`;
  if (unit === 'jobs') return integer(value);
  return `${Math.round(value)} ${unit}`;
}

/** Goal / target / ratio / met? for each Docket system present. */
export function goalsTable(goals, docketSystems) {
  const verdict = (met) => (met === undefined ? 'n/a' : met ? 'yes' : 'NO');
  return {
    title: 'Goals (ratios from this run)',
    headers: ['goal', 'target', ...docketSystems.flatMap((system) => [`${SYSTEM_NAMES[system]} ratio`, 'met?'])],
    numeric: docketSystems.map((_, index) => 2 + index * 2),
    rows: goals.map(({ goal, target, results }) => [
      goal,
      target,
      ...docketSystems.flatMap((system) => {
        const result = results[system];
        if (!result) return ['not measured', '-'];
        const shown = result.value === undefined ? times(result.ratio) : result.ratio === undefined ? ownFigure(result) : `${ms(result.value)} ms (${times(result.ratio)})`;
        return [shown, verdict(result.met)];
      }),
    ]),
  };
}

/** Aligned text, numbers right-aligned. */
export function renderText(table) {
  const widths = table.headers.map((header, column) => Math.max(header.length, ...table.rows.map((row) => row[column].length)));
  const line = (cells) =>
    cells.map((cell, column) => (table.numeric.includes(column) ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ').trimEnd();
  return [table.title, line(table.headers), widths.map((width) => '-'.repeat(width)).join('  '), ...table.rows.map(line)].join('\n');
}

/** A GitHub markdown table under a heading. */
export function renderMarkdown(table) {
  const escape = (cell) => cell.replaceAll('|', '\\|');
  const line = (cells) => `| ${cells.map(escape).join(' | ')} |`;
  const rule = table.headers.map((_, column) => (table.numeric.includes(column) ? '---:' : '---'));
  return [`### ${table.title}`, '', line(table.headers), `|${rule.join('|')}|`, ...table.rows.map(line)].join('\n');
}
