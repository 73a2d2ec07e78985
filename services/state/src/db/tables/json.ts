import type { ColumnType } from 'kysely';

/** A JSON object as stored in a jsonb column. */
export type JsonObject = { [key: string]: JsonValue };
/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A jsonb column: read as parsed JSON, written as JSON text. */
export type JsonbColumn<T extends JsonValue> = ColumnType<T, string, string>;
/** A nullable jsonb column. */
export type NullableJsonbColumn<T extends JsonValue> = ColumnType<T | null, string | null | undefined, string | null>;
/**
 * An int8 column (fences, revisions, sequences, generations, counters, and
 * durations in milliseconds, `*_ms`): read, inserted and updated as a
 * `bigint`. Every pool of the state service parses int8 into a `bigint`
 * (`openPool`), rows read back from JSON map it the same way
 * (`json-rows.ts`), and rows sent as a JSON parameter carry it as a decimal
 * string (`jsonParameter`), so the domain never sees a decimal string.
 * Durations stay `bigint` too, for one rule per column type: the domain
 * turns one into a number (`Number(row.x_ms)`) only where it does
 * arithmetic with a clock, and `BigInt(ms)` when it writes one.
 */
export type Int8Column = ColumnType<bigint, bigint, bigint>;
