/**
 * The shape of a schema Docket owns, as the catalogs describe it, and the
 * comparison of a live schema with the committed snapshot
 * (`schema-snapshot.generated.ts`, produced from a freshly migrated database
 * by `npm run schema:snapshot`).
 *
 * What is compared, and what Postgres may vary without a refusal:
 * - Tables (and views, foreign tables) by name. Columns by name, not by
 *   position: a column dropped and added again by a migration sits at
 *   another position but is the same column. Each column's type with its
 *   modifiers, nullability, default expression, identity and generation.
 * - Constraints by kind and definition, not by name, so the names Postgres
 *   chooses for constraints nobody named (`jobs_pkey`, `jobs_status_check`)
 *   cannot cause a refusal; the snapshot's name only appears in messages.
 *   Not-null constraints are compared as column nullability.
 * - Indexes by definition (unique, method, keys, predicate), not by name.
 * - Triggers by name, with their definition and whether they are enabled.
 * - Functions by signature, with their result type, language, volatility,
 *   security and a digest of their body.
 * - Nothing that carries an OID, an owner, a privilege or a statistic, and
 *   nothing an extension created. Sequences are not listed: a column default
 *   such as `nextval(...)` or an identity names the one a column relies on.
 *
 * Definitions are rendered with `search_path` set to the schema being read
 * (then `pg_catalog`), so the same schema reads the same whatever the
 * role's own search path and whichever name Docket's schema has.
 */

/** One column. `identity` is `a` (always), `d` (by default) or empty; `generated` is `s` (stored) or empty. */
export interface ColumnShape {
  readonly type: string;
  readonly nullable: boolean;
  readonly default: string | null;
  readonly identity: string;
  readonly generated: string;
}

/** A constraint; `type` is pg_constraint.contype (`c`, `f`, `p`, `u`, `x`, `t`). */
export interface ConstraintShape {
  readonly name: string;
  readonly type: string;
  readonly definition: string;
}

/** An index; `definition` leaves out the index's and the table's names. */
export interface IndexShape {
  readonly name: string;
  readonly definition: string;
}

/**
 * A trigger; `definition` names its table without the schema, `enabled` is
 * pg_trigger.tgenabled (`O` enabled, `D` disabled, `R` replica, `A` always).
 */
export interface TriggerShape {
  readonly name: string;
  readonly definition: string;
  readonly enabled: string;
}

/** A table, view or foreign table; `kind` is pg_class.relkind. */
export interface TableShape {
  readonly kind: string;
  readonly columns: Readonly<Record<string, ColumnShape>>;
  readonly constraints: readonly ConstraintShape[];
  readonly indexes: readonly IndexShape[];
  readonly triggers: readonly TriggerShape[];
}

/** A function or procedure, keyed in its schema by `name(argument types)`. */
export interface FunctionShape {
  readonly result: string;
  readonly language: string;
  readonly volatility: string;
  readonly security_definer: boolean;
  readonly body_md5: string;
}

/** Everything compared about one schema. */
export interface SchemaShape {
  readonly tables: Readonly<Record<string, TableShape>>;
  readonly functions: Readonly<Record<string, FunctionShape>>;
}

/** The committed snapshot: the shapes a database has right after this build's migrations. */
export interface SchemaSnapshot {
  /** The newest migration's id: the version the shapes belong to. */
  readonly version: string;
  /** The schema the migrations create (the role's `current_schema()`, normally `public`). */
  readonly docket: SchemaShape;
  /** The approval history's schema (`approval-history.ts`), wherever it lives. */
  readonly approval_history: SchemaShape;
}

/**
 * One catalog query for the whole shape of the schema named by `$1`; run it
 * with `search_path` set to that schema and `pg_catalog`
 * ({@link searchPathFor}).
 *
 * ```sql
 * select json_build_object('tables', ..., 'functions', ...) as shape
 * from pg_namespace n where n.nspname = $1
 * ```
 */
export const SCHEMA_SHAPE_QUERY = `
select json_build_object(
  'tables', (
    select coalesce(json_object_agg(c.relname, json_build_object(
      'kind', c.relkind,
      'columns', (
        select coalesce(json_object_agg(a.attname, json_build_object(
          'type', format_type(a.atttypid, a.atttypmod),
          'nullable', not a.attnotnull,
          'default', pg_get_expr(d.adbin, d.adrelid),
          'identity', a.attidentity,
          'generated', a.attgenerated) order by a.attname), '{}'::json)
        from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped),
      'constraints', (
        select coalesce(json_agg(json_build_object('name', k.conname, 'type', k.contype, 'definition', pg_get_constraintdef(k.oid))
          order by k.contype, pg_get_constraintdef(k.oid), k.conname), '[]'::json)
        from pg_constraint k where k.conrelid = c.oid and k.contype <> 'n'),
      'indexes', (
        select coalesce(json_agg(json_build_object('name', i.relname,
          'definition', regexp_replace(pg_get_indexdef(x.indexrelid), '^CREATE (UNIQUE )?INDEX \\S+ ON (ONLY )?\\S+ USING ', '\\1'))
          order by i.relname), '[]'::json)
        from pg_index x join pg_class i on i.oid = x.indexrelid where x.indrelid = c.oid),
      'triggers', (
        select coalesce(json_agg(json_build_object('name', t.tgname,
          'definition', replace(pg_get_triggerdef(t.oid), ' ON ' || quote_ident(n.nspname) || '.', ' ON '), 'enabled', t.tgenabled)
          order by t.tgname), '[]'::json)
        from pg_trigger t where t.tgrelid = c.oid and not t.tgisinternal)
    ) order by c.relname), '{}'::json)
    from pg_class c
    where c.relnamespace = n.oid and c.relkind in ('r', 'p', 'v', 'm', 'f')
      and not exists (select from pg_depend e where e.classid = 'pg_class'::regclass and e.objid = c.oid and e.deptype = 'e')),
  'functions', (
    select coalesce(json_object_agg(p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', json_build_object(
      'result', coalesce(pg_get_function_result(p.oid), ''),
      'language', l.lanname,
      'volatility', p.provolatile,
      'security_definer', p.prosecdef,
      'body_md5', md5(p.prosrc)) order by p.proname, pg_get_function_identity_arguments(p.oid)), '{}'::json)
    from pg_proc p join pg_language l on l.oid = p.prolang
    where p.pronamespace = n.oid
      and not exists (select from pg_depend e where e.classid = 'pg_proc'::regclass and e.objid = p.oid and e.deptype = 'e'))
) as shape
from pg_namespace n where n.nspname = $1`;

/** The `search_path` value under which {@link SCHEMA_SHAPE_QUERY} reads `schema`. */
export function searchPathFor(schema: string): string {
  return `"${schema.replaceAll('"', '""')}", pg_catalog`;
}

/** The shape of a schema that does not exist: nothing in it. */
export const EMPTY_SCHEMA: SchemaShape = { tables: {}, functions: {} };

const CONSTRAINT_KINDS: Readonly<Record<string, string>> = {
  c: 'check constraint',
  f: 'foreign key',
  p: 'primary key',
  u: 'unique constraint',
  x: 'exclusion constraint',
  t: 'constraint trigger',
};
const RELATION_KINDS: Readonly<Record<string, string>> = { r: 'a table', p: 'a partitioned table', v: 'a view', m: 'a materialized view', f: 'a foreign table' };
const IDENTITY: Readonly<Record<string, string>> = { a: 'generated always as identity', d: 'generated by default as identity', '': 'no identity' };

/**
 * Every difference between the live schema and the expected one, each a
 * short phrase for an operator (`column jobs.queue is missing`), in a
 * stable order: tables by name, then within a table columns, constraints,
 * indexes and triggers, then functions. `prefix` qualifies names in the
 * phrases (`docket_approval_history.`), empty for Docket's own schema.
 * Nothing else is in a phrase than names, types and the expected or found
 * property, so it never echoes data.
 */
export function schemaDifferences(expected: SchemaShape, actual: SchemaShape, prefix = ''): string[] {
  const differences: string[] = [];
  for (const name of unionOf(Object.keys(expected.tables), Object.keys(actual.tables))) {
    const want = expected.tables[name];
    const have = actual.tables[name];
    const table = `${prefix}${name}`;
    if (!have) {
      differences.push(`table ${table} is missing`);
    } else if (!want) {
      differences.push(`unexpected table ${table} (not in this build's schema)`);
    } else {
      differences.push(...tableDifferences(table, want, have));
    }
  }
  for (const name of unionOf(Object.keys(expected.functions), Object.keys(actual.functions))) {
    const want = expected.functions[name];
    const have = actual.functions[name];
    if (!have) differences.push(`function ${prefix}${name} is missing`);
    else if (!want) differences.push(`unexpected function ${prefix}${name} (not in this build's schema)`);
    else if (JSON.stringify(sortedKeys(want)) !== JSON.stringify(sortedKeys(have))) differences.push(`function ${prefix}${name} differs`);
  }
  return differences;
}

function tableDifferences(table: string, want: TableShape, have: TableShape): string[] {
  const differences: string[] = [];
  if (want.kind !== have.kind) {
    differences.push(`${table} is ${RELATION_KINDS[have.kind] ?? have.kind}, expected ${RELATION_KINDS[want.kind] ?? want.kind}`);
  }
  for (const name of unionOf(Object.keys(want.columns), Object.keys(have.columns))) {
    const w = want.columns[name];
    const h = have.columns[name];
    const column = `column ${table}.${name}`;
    if (!h) {
      differences.push(`${column} is missing`);
      continue;
    }
    if (!w) {
      differences.push(`unexpected ${column} (not in this build's schema)`);
      continue;
    }
    if (w.type !== h.type) differences.push(`${column} has type ${h.type}, expected ${w.type}`);
    if (w.nullable !== h.nullable) differences.push(`${column} is ${nullability(h.nullable)}, expected ${nullability(w.nullable)}`);
    if (w.default !== h.default) differences.push(`${column} has ${defaultOf(h.default)}, expected ${defaultOf(w.default)}`);
    if (w.identity !== h.identity) differences.push(`${column} has ${IDENTITY[h.identity] ?? h.identity}, expected ${IDENTITY[w.identity] ?? w.identity}`);
    if (w.generated !== h.generated) differences.push(`${column} is ${h.generated ? 'a generated column' : 'not generated'}, expected ${w.generated ? 'a generated column' : 'not generated'}`);
  }
  const constraintKey = (c: ConstraintShape): string => `${c.type} ${c.definition}`;
  for (const { item, missing } of multisetDifferences(want.constraints, have.constraints, constraintKey)) {
    const kind = CONSTRAINT_KINDS[item.type] ?? 'constraint';
    differences.push(missing ? `${kind} ${item.name} on ${table} is missing` : `unexpected ${kind} ${item.name} on ${table} (not in this build's schema)`);
  }
  for (const { item, missing } of multisetDifferences(want.indexes, have.indexes, (i) => i.definition)) {
    differences.push(missing ? `index ${item.name} on ${table} is missing` : `unexpected index ${item.name} on ${table} (not in this build's schema)`);
  }
  for (const name of unionOf(want.triggers.map((t) => t.name), have.triggers.map((t) => t.name))) {
    const w = want.triggers.find((t) => t.name === name);
    const h = have.triggers.find((t) => t.name === name);
    if (!h) differences.push(`trigger ${name} on ${table} is missing`);
    else if (!w) differences.push(`unexpected trigger ${name} on ${table} (not in this build's schema)`);
    else if (w.definition !== h.definition) differences.push(`trigger ${name} on ${table} differs`);
    else if (w.enabled !== h.enabled) differences.push(`trigger ${name} on ${table} is ${h.enabled === 'D' ? 'disabled' : `enabled as ${h.enabled}`}, expected ${w.enabled === 'D' ? 'disabled' : 'enabled'}`);
  }
  return differences;
}

/**
 * The items of `want` that `have` lacks (missing) and of `have` that `want`
 * lacks, matched by `key` and counted, so two identical checks are not one.
 */
function multisetDifferences<T>(want: readonly T[], have: readonly T[], key: (item: T) => string): { item: T; missing: boolean }[] {
  const remaining = new Map<string, T[]>();
  for (const item of have) remaining.set(key(item), [...(remaining.get(key(item)) ?? []), item]);
  const differences: { item: T; missing: boolean }[] = [];
  for (const item of want) {
    const matches = remaining.get(key(item));
    if (matches && matches.length > 0) matches.shift();
    else differences.push({ item, missing: true });
  }
  for (const extra of remaining.values()) differences.push(...extra.map((item) => ({ item, missing: false })));
  return differences;
}

function unionOf(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])].sort();
}

function nullability(nullable: boolean): string {
  return nullable ? 'nullable' : 'not null';
}

function defaultOf(expression: string | null): string {
  return expression === null ? 'no default' : `default ${expression}`;
}

function sortedKeys(value: object): [string, unknown][] {
  return Object.entries(value).sort(([a], [b]) => a.localeCompare(b));
}
