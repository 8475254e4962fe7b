import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { getMetadataArgsStorage } from 'typeorm';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from './migrations/index.js';
import { buildDataSourceOptions } from './typeorm-options.js';

const SRC = join(import.meta.dirname, '..');

/** Imports every file under `dir` whose name matches, and answers what they export. */
async function exportsOf(dir: string, name: RegExp): Promise<unknown[]> {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => name.test(file));
  const modules = await Promise.all(files.map((file) => import(join(dir, file)) as Promise<Record<string, unknown>>));
  return modules.flatMap((module) => Object.values(module));
}

describe('the data sources’ lists', () => {
  it('are what every data source is built with', () => {
    const options = buildDataSourceOptions('postgres://127.0.0.1/unused');
    expect(options.entities).toBe(ENTITIES);
    expect(options.migrations).toBe(MIGRATIONS);
  });

  it('name every class of a *.entity.ts file that TypeORM knows as an entity, once', async () => {
    await exportsOf(SRC, /\.entity\.ts$/);
    const declared = getMetadataArgsStorage().tables.map((table) => table.target);
    expect(new Set(ENTITIES).size).toBe(ENTITIES.length);
    expect(new Set(ENTITIES)).toEqual(new Set(declared));
  });

  it('name every migration of the migrations folder, once', async () => {
    const classes = await exportsOf(join(SRC, 'database', 'migrations'), /^\d+-\w+\.ts$/);
    expect(new Set(MIGRATIONS).size).toBe(MIGRATIONS.length);
    expect(new Set(MIGRATIONS)).toEqual(new Set(classes));
  });
});
