import { CompiledQuery } from 'kysely';
import pg from 'pg';
import type { Queryable } from './database.js';
import { keepsSessionState } from './pool.js';
import { literalOf } from './statement-literal.js';

/** Where a statement runs: the pool (any of its connections), a pooled connection, an open transaction's connection, or kysely's handle of either. */
export type StatementTarget = pg.Pool | pg.ClientBase | Queryable;

/** The statements each connection is known to hold prepared (those it ran by name and that succeeded). */
const preparedOn = new WeakMap<pg.ClientBase, Set<string>>();

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
    if (!(target instanceof pg.Pool) && keepsSessionState(target)) {
      const names = preparedOn.get(target) ?? new Set<string>();
      names.add(this.name);
      preparedOn.set(target, names);
    }
    return result.rows;
  }

  /** Whether `client` holds this statement prepared, so a simple-protocol query may `EXECUTE` it ({@link executeText}). */
  isPreparedOn(client: pg.ClientBase): boolean {
    return preparedOn.get(client)?.has(this.name) === true;
  }

  /**
   * `EXECUTE name(...)` with `values` as literals ({@link literalOf}): the
   * statement as one of several in a simple-protocol query, on a
   * connection it is prepared on, with the plan that connection cached.
   */
  executeText(values: readonly unknown[]): string {
    return values.length === 0 ? `execute ${this.name}` : `execute ${this.name}(${values.map(literalOf).join(', ')})`;
  }
}
