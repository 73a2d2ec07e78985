// Small statistics shared by the load generators and the report: quantiles
// of latency samples and medians across repetitions.

/** The q-quantile (0..1) of a list of numbers (nearest rank); undefined for an empty list. */
export function quantile(values, q) {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The median of a list of numbers, averaging the middle pair; undefined for an empty list. */
export function median(values) {
  const present = values.filter((value) => typeof value === 'number' && Number.isFinite(value));
  if (present.length === 0) return undefined;
  const sorted = present.sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** p50 and p99 of latency samples in milliseconds (null when there are none). */
export function latencySummary(latencies) {
  return {
    samples: latencies.length,
    p50Ms: quantile(latencies, 0.5) ?? null,
    p99Ms: quantile(latencies, 0.99) ?? null,
  };
}
