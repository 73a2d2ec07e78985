import type { ColumnType } from 'kysely';

/** A JSON object as stored in a jsonb column. */
export type JsonObject = { [key: string]: JsonValue };
/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A jsonb column: read as parsed JSON, written as JSON text. */
export type JsonbColumn<T extends JsonValue> = ColumnType<T, string, string>;
/** A nullable jsonb column. */
export type NullableJsonbColumn<T extends JsonValue> = ColumnType<T | null, string | null | undefined, string | null>;
/** A bigint column: pg returns int8 as a decimal string. */
export type Int8Column = ColumnType<string, string | bigint | number, string | bigint | number>;
