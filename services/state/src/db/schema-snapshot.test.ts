import { describe, expect, it } from 'vitest';
import { schemaDifferences, type SchemaShape, type TableShape } from './schema-snapshot.js';

const text = { type: 'text', nullable: false, default: null, identity: '', generated: '' };

function table(overrides: Partial<TableShape> = {}): TableShape {
  return {
    kind: 'r',
    columns: { id: text, queue: text, priority: { ...text, type: 'integer', default: '0' } },
    constraints: [
      { name: 'jobs_pkey', type: 'p', definition: 'PRIMARY KEY (id)' },
      { name: 'jobs_priority_check', type: 'c', definition: 'CHECK ((priority >= 0))' },
    ],
    indexes: [{ name: 'jobs_pkey', definition: 'UNIQUE btree (id)' }],
    triggers: [{ name: 'refuse_update', definition: 'CREATE TRIGGER refuse_update BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION refuse()', enabled: 'O' }],
    ...overrides,
  };
}

function schema(jobs: TableShape = table()): SchemaShape {
  return {
    tables: { jobs },
    functions: { 'refuse()': { result: 'trigger', language: 'plpgsql', volatility: 'v', security_definer: false, body_md5: 'aa' } },
  };
}

describe('schemaDifferences', () => {
  it('finds none between equal schemas, whatever the column order or the names of constraints and indexes', () => {
    const reordered = table({
      columns: { priority: { ...text, type: 'integer', default: '0' }, queue: text, id: text },
      constraints: [
        { name: 'jobs_priority_nonnegative', type: 'c', definition: 'CHECK ((priority >= 0))' },
        { name: 'jobs_pk', type: 'p', definition: 'PRIMARY KEY (id)' },
      ],
      indexes: [{ name: 'jobs_pk', definition: 'UNIQUE btree (id)' }],
    });
    expect(schemaDifferences(schema(), schema(reordered))).toEqual([]);
  });

  it('names a missing, an unexpected and a changed column', () => {
    const changed = table({ columns: { id: text, priority: { ...text, type: 'bigint', nullable: true, default: null }, extra: text } });
    expect(schemaDifferences(schema(), schema(changed))).toEqual([
      'unexpected column jobs.extra (not in this build\'s schema)',
      'column jobs.priority has type bigint, expected integer',
      'column jobs.priority is nullable, expected not null',
      'column jobs.priority has no default, expected default 0',
      'column jobs.queue is missing',
    ]);
  });

  it('names a constraint whose definition changed as missing under its expected name, and the new one as unexpected', () => {
    const loosened = table({
      constraints: [
        { name: 'jobs_pkey', type: 'p', definition: 'PRIMARY KEY (id)' },
        { name: 'jobs_priority_check', type: 'c', definition: 'CHECK ((priority >= -1))' },
      ],
    });
    expect(schemaDifferences(schema(), schema(loosened))).toEqual([
      'check constraint jobs_priority_check on jobs is missing',
      "unexpected check constraint jobs_priority_check on jobs (not in this build's schema)",
    ]);
  });

  it('counts identical constraints: one of two equal checks dropped is a difference', () => {
    const twice = table({ constraints: [...table().constraints, { name: 'jobs_priority_check1', type: 'c', definition: 'CHECK ((priority >= 0))' }] });
    expect(schemaDifferences(schema(twice), schema())).toEqual(['check constraint jobs_priority_check1 on jobs is missing']);
  });

  it('names missing indexes, disabled triggers, changed functions and missing tables, qualified by the prefix', () => {
    const damaged: SchemaShape = {
      tables: { jobs: table({ indexes: [], triggers: [{ ...table().triggers[0]!, enabled: 'D' }] }) },
      functions: { 'refuse()': { ...schema().functions['refuse()']!, body_md5: 'bb' } },
    };
    const expected: SchemaShape = { ...schema(), tables: { ...schema().tables, decisions: table() } };
    expect(schemaDifferences(expected, damaged, 'history.')).toEqual([
      'table history.decisions is missing',
      'index jobs_pkey on history.jobs is missing',
      'trigger refuse_update on history.jobs is disabled, expected enabled',
      'function history.refuse() differs',
    ]);
  });
});
