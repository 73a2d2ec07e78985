import { expect } from 'vitest';

/*
 * Reading a service's /metrics in tests: the Prometheus text format,
 * parsed strictly.
 */

/** One sample of the Prometheus text format. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the Prometheus text exposition format (0.0.4): comments, `name{labels} value` lines; fails on anything else. */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) {
      if (line.startsWith('# ') && !/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* /.test(line)) throw new Error(`bad comment: ${line}`);
      continue;
    }
    // Values as Prometheus reads them (Go's ParseFloat): NaN and Inf in any case (prom-client writes `Nan`).
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[Nn][Aa][Nn]|[+-]?[Ii][Nn][Ff])$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    const text = match[3]!.toLowerCase();
    samples.push({ name: match[1]!, labels, value: text === 'nan' ? Number.NaN : text.endsWith('inf') ? (text.startsWith('-') ? -Infinity : Infinity) : Number(text) });
  }
  return samples;
}

/** GET `url`/metrics, checked to be the Prometheus text format, parsed. */
export async function scrape(url: string): Promise<Sample[]> {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await response.text());
}

/** The value of the sample named `name` whose labels include `labels`, if any. */
export function value(samples: readonly Sample[], name: string, labels: Record<string, string>): number | undefined {
  return samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted))?.value;
}
