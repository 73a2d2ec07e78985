// The heaviest functions of the `.cpuprofile` files a service wrote under
// `node --cpu-prof`, by self time: what bench/profile.mjs and
// bench/profile-replay.mjs print per service.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Prints, for each profile in `directory`, its busy time, that time per
 * `unit` (`{ count, name }`) and its `top` functions by self time. With
 * `window` (`{ from, to }`, microseconds of `process.hrtime`, the clock a
 * profile's timestamps use), only the samples taken within it count.
 * `labels` (process id to name) names the process each profile is of.
 */
export function printCpuProfiles(directory, unit, top = Number(process.env.PROFILE_TOP ?? 18), window = undefined, labels = {}) {
  for (const file of readdirSync(directory).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(directory, file), 'utf8'));
    const self = new Map();
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const interval = (profile.endTime - profile.startTime) / profile.samples.length / 1000;
    let busy = 0;
    let at = profile.startTime;
    for (const [index, id] of profile.samples.entries()) {
      at += profile.timeDeltas[index];
      if (window && (at < window.from || at > window.to)) continue;
      const { callFrame } = byId.get(id);
      if (callFrame.functionName === '(idle)' || callFrame.functionName === '(program)') continue;
      busy += interval;
      const key = `${callFrame.functionName || '(anonymous)'} ${callFrame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(services|packages)\//, '$1/')}:${callFrame.lineNumber}`;
      self.set(key, (self.get(key) ?? 0) + interval);
    }
    const label = labels[/^CPU\.\d+\.\d+\.(\d+)\./.exec(file)?.[1]];
    console.log(`\n${label ? `${label} (${file})` : file}: ${Math.round(busy)} ms busy, ${((busy / unit.count) * 1000).toFixed(1)} µs per ${unit.name}`);
    for (const [key, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${key}`);
    // The same time by where the code lives: a package, a Node internal module, a file of this repository.
    const shares = new Map();
    for (const [key, ms] of self) {
      const place = key.slice(key.indexOf(' ') + 1).replace(/:\d+$/, '');
      const where = place.startsWith('@') ? place.split('/').slice(0, 2).join('/') : place.startsWith('node:') || place.startsWith('services/') || place.startsWith('packages/') ? place : place.split('/')[0] || key.split(' ')[0];
      shares.set(where, (shares.get(where) ?? 0) + ms);
    }
    console.log('  by place:');
    for (const [where, ms] of [...shares].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${((ms / busy) * 100).toFixed(1).padStart(5)} %  ${where}`);
  }
}
