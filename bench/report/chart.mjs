// A hand-written SVG: horizontal bars of jobs/s, one block per scenario
// group, one bar per row, each block scaled to its own fastest row (compare
// bars within a block, not across blocks), one colour per system.
import { SYSTEM_NAMES } from '../plan.mjs';

const COLOURS = { handwritten: '#6b7280', pgboss: '#d97706', graphile: '#7c3aed', docket: '#2563eb', 'docket-baseline': '#93c5fd', 'docket-one': '#0891b2' };
const WIDTH = 1100;
const LABEL_WIDTH = 430;
const BAR_WIDTH = 520;
const ROW = 20;
const HEADING = 30;

const escape = (text) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** The chart for `rows` (medians), titled `title`. */
export function renderChart(rows, title) {
  const groups = [];
  for (const row of rows) {
    let group = groups.find((candidate) => candidate.key === row.groupKey);
    if (!group) groups.push((group = { key: row.groupKey, name: row.group, rows: [] }));
    group.rows.push(row);
  }
  const parts = [];
  let y = 50;
  for (const group of groups) {
    const fastest = Math.max(...group.rows.map((row) => row.jobsPerSecond ?? 0), 1);
    parts.push(`<text x="10" y="${y + 18}" class="group">${escape(group.name)}</text>`);
    y += HEADING;
    for (const row of group.rows) {
      const length = Math.max(1, ((row.jobsPerSecond ?? 0) / fastest) * BAR_WIDTH);
      parts.push(
        `<text x="${LABEL_WIDTH - 8}" y="${y + 14}" class="label">${escape(`${row.systemName}: ${row.label}`)}</text>`,
        `<rect x="${LABEL_WIDTH}" y="${y + 3}" width="${length.toFixed(1)}" height="${ROW - 6}" fill="${COLOURS[row.system]}"/>`,
        `<text x="${(LABEL_WIDTH + length + 6).toFixed(1)}" y="${y + 14}" class="value">${Math.round(row.jobsPerSecond ?? 0).toLocaleString('en-US')} jobs/s</text>`,
      );
      y += ROW;
    }
    y += 8;
  }
  const legend = Object.entries(COLOURS)
    .filter(([system]) => rows.some((row) => row.system === system))
    .map(([system, colour], index) => {
      const x = 10 + index * 190;
      return `<rect x="${x}" y="${y + 10}" width="12" height="12" fill="${colour}"/><text x="${x + 18}" y="${y + 21}" class="value">${escape(SYSTEM_NAMES[system])}</text>`;
    });
  const height = y + 40;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    '<style>.title{font-size:16px;font-weight:bold}.group{font-size:13px;font-weight:bold}.label{font-size:11px;text-anchor:end}.value{font-size:11px}</style>',
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="10" y="28" class="title">${escape(title)}</text>`,
    ...parts,
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
