import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';

/*
 * The committed schema snapshot (services/state/src/db/schema-snapshot.generated.ts)
 * is what the state service requires of every database at start-up. It must
 * be exactly what this build's migrations and the approval history leave in
 * an empty database: a migration added or changed without regenerating the
 * snapshot (`npm run schema:snapshot`) fails here, before it could make
 * every start-up refuse.
 */

const SCRIPT = join(REPO_ROOT, 'services/state/scripts/schema-snapshot.mjs');
const SNAPSHOT_MODULE = join(REPO_ROOT, 'services/state/dist/db/schema-snapshot.generated.js');

describe('the committed schema snapshot', () => {
  it('is what the migrations leave in a fresh database', async () => {
    const url = await createTestDatabase('schema snapshot');
    const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT, '--print'], {
      env: { PATH: process.env['PATH'] ?? '', DOCKET_DATABASE_URL: url },
    });
    const fresh: unknown = JSON.parse(stdout);
    const { SCHEMA_SNAPSHOT } = (await import(pathToFileURL(SNAPSHOT_MODULE).href)) as { SCHEMA_SNAPSHOT: unknown };
    expect(fresh, 'the migrations and the committed schema snapshot disagree: run `npm run schema:snapshot` and commit the result').toEqual(SCHEMA_SNAPSHOT);
  });
});
