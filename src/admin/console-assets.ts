import { Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The console's three files, read once at start: a build that lost them fails at boot, not on the
 * first visit. `console/` sits beside this file both in src/ (tests) and in dist/ (nest-cli assets).
 */
@Injectable()
export class ConsoleAssets {
  readonly html = ConsoleAssets.read('index.html');
  readonly script = ConsoleAssets.read('console.js');
  readonly stylesheet = ConsoleAssets.read('console.css');

  private static read(file: string): string {
    return readFileSync(join(__dirname, 'console', file), 'utf8');
  }
}
