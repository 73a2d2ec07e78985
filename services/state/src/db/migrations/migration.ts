/**
 * One append-only schema step. Its `sql` never changes once released: the
 * migrator records a checksum of it and refuses a database whose recorded
 * checksum differs. `creates` names the relations the step must leave behind,
 * which lets startup detect a half-migrated or hand-damaged schema.
 */
export interface Migration {
  /** Sortable, unique, timestamp-named id, e.g. `20261129-0001-initial`. */
  readonly id: string;
  readonly sql: string;
  readonly creates: readonly string[];
}
