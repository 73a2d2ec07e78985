import type { Duration } from '@bufbuild/protobuf/wkt';
import { UsageError } from './command.js';

/** Seconds per unit of a retention age, largest first (the order {@link formatRetentionAge} tries them in). */
const UNIT_SECONDS = [
  ['d', 86_400n],
  ['h', 3_600n],
  ['m', 60n],
  ['s', 1n],
] as const;

/** The longest google.protobuf.Duration (10,000 years); anything longer cannot be sent. */
const DURATION_MAX_SECONDS = 315_576_000_000n;

const AGE_PATTERN = /^([0-9]+)([dhms])$/;

/**
 * The seconds of a retention age written as a whole number and one unit:
 * `30d`, `12h`, `90m`, `45s`. Anything else (fractions, several units, no
 * unit, zero, more than a Duration holds) is a UsageError naming `flag`.
 */
export function parseRetentionAge(text: string, flag: string): bigint {
  const match = AGE_PATTERN.exec(text);
  if (!match) throw new UsageError(`${flag} must be a whole number and one unit, d, h, m or s (like 30d, 12h, 90m, 45s)`);
  const unit = UNIT_SECONDS.find(([name]) => name === match[2]);
  const seconds = BigInt(match[1] ?? '0') * (unit?.[1] ?? 1n);
  if (seconds < 1n) throw new UsageError(`${flag} must be at least 1s`);
  if (seconds > DURATION_MAX_SECONDS) throw new UsageError(`${flag} must be at most ${DURATION_MAX_SECONDS}s (10,000 years)`);
  return seconds;
}

/**
 * A retention age as the CLI writes it: in the largest unit that divides
 * it (`2592000s` is `30d`, `5400s` is `90m`); an age with a fraction of a
 * second, which the CLI never sends, in seconds with the fraction.
 */
export function formatRetentionAge(age: Duration): string {
  if (age.nanos !== 0) return `${(Number(age.seconds) + age.nanos / 1e9).toString()}s`;
  const [name, seconds] = UNIT_SECONDS.find(([, size]) => age.seconds % size === 0n) ?? ['s', 1n];
  return `${age.seconds / seconds}${name}`;
}
