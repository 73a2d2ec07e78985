import type { TextMapGetter, TextMapSetter } from '@opentelemetry/api';

/** Reads propagation fields (`traceparent`, `tracestate`) from the Fetch API `Headers` Connect uses. */
export const headerGetter: TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};

/** Writes propagation fields into the Fetch API `Headers` of an outgoing call. */
export const headerSetter: TextMapSetter<Headers> = {
  set: (headers, key, value) => headers.set(key, value),
};
