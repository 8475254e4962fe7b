import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from './migrations/index.js';

const SRC = join(import.meta.dirname, '..');

/** The classes a folder's files export, by file name pattern. */
function exportedClasses(dir: string, file: RegExp): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => file.test(name))
    .flatMap((name) => [...readFileSync(join(dir, name), 'utf8').matchAll(/^export class (\w+)/gm)].map((m) => m[1]));
}

describe('the data sources’ lists', () => {
  it('name every entity of every *.entity.ts file, once', () => {
    const names = ENTITIES.map((entity) => entity.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(exportedClasses(SRC, /\.entity\.ts$/).sort());
  });

  it('name every migration of the migrations folder, in the order of their timestamps', () => {
    const dir = join(SRC, 'database', 'migrations');
    const names = MIGRATIONS.map((migration) => migration.name);
    expect([...names].sort()).toEqual(exportedClasses(dir, /^\d+-\w+\.ts$/).sort());
    const timestamps = names.map((name) => Number(/(\d{13})$/.exec(name)?.[1]));
    expect(timestamps).toEqual([...timestamps].sort((a, b) => a - b));
  });
});
