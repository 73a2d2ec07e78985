import type pg from 'pg';

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

  /** Runs the statement on `client` (a pooled connection or an open transaction's). */
  async run(client: pg.ClientBase, values: readonly unknown[]): Promise<Row[]> {
    const result = await client.query<Row & pg.QueryResultRow>({ name: this.name, text: this.text, values: [...values] });
    return result.rows;
  }
}
