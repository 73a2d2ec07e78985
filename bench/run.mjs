// `npm run bench`: every benchmark, one after another, on this machine.
// Figures are medians and ratios from one run; these machines are shared
// and noisy, so compare rows of the same run, not runs.
import { benchAdmission } from './admission.mjs';
import { benchJournal } from './journal.mjs';

const rows = [...(await benchAdmission()), ...(await benchJournal())];
rows.push(...(await (await import('./claims.mjs')).benchClaims()));
rows.push(...(await (await import('./streams.mjs')).benchStreams()));
console.table(rows);
