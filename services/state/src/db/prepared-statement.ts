import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import type { Queryable } from './database.js';

/** Where a statement runs: the pool (any of its connections), a pooled connection, an open transaction's connection, or kysely's handle of either. */
export type StatementTarget = pg.Pool | pg.ClientBase | Queryable;

/**
 * A hot-path SQL statement with a fixed name: node-postgres prepares it once
 * per connection (Parse) and afterwards only binds and executes it, so
 * Postgres plans it once per connection instead of once per call. Its text
 * never changes at run time; every value travels as a parameter.
 */
export class PreparedStatement<Row> {
  constructor(
    readonly name: string,
    readonly text: string,
  ) {}

  /**
   * Runs the statement on `target`. Through kysely (an owner call's
   * transaction) it runs unnamed, with the same text and parameters: kysely
   * owns that connection's statements.
   */
  async run(target: StatementTarget, values: readonly unknown[]): Promise<Row[]> {
    if ('executeQuery' in target) return [...(await target.executeQuery<Row>(CompiledQuery.raw(this.text, [...values]))).rows];
    const result = await target.query<Row & pg.QueryResultRow>({ name: this.name, text: this.text, values: [...values] });
    return result.rows;
  }
}
