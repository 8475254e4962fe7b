import { Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The console's script modules, each served at /admin/<name>; console.js imports the others. */
export const CONSOLE_SCRIPTS = ['console.js', 'api.js', 'dom.js', 'charts.js', 'keys.js', 'operations.js', 'documents.js', 'people.js', 'archive.js'] as const;
export type ConsoleScript = (typeof CONSOLE_SCRIPTS)[number];

/**
 * The console's files, read once at start: a build that lost one fails at boot, not on the first visit.
 * `console/` sits beside this file both in src/ (tests) and in dist/ (nest-cli assets).
 */
@Injectable()
export class ConsoleAssets {
  readonly html = ConsoleAssets.read('index.html');
  readonly stylesheet = ConsoleAssets.read('console.css');
  private readonly scripts = new Map<string, string>(CONSOLE_SCRIPTS.map((name) => [name, ConsoleAssets.read(name)]));

  /** The module called `name`, or undefined for any other name. */
  script(name: string): string | undefined {
    return this.scripts.get(name);
  }

  private static read(file: string): string {
    return readFileSync(join(import.meta.dirname, 'console', file), 'utf8');
  }
}
