import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One variable line of .env.example: `NAME=value`, or `# NAME=value` (commented out: unset). */
export interface ExampleEntry {
  name: string;
  value: string;
  commented: boolean;
  /** The comment lines right above it, when they belong to it alone (the next line after them is this entry). */
  comment: string;
  line: number;
}

const ENTRY = /^(#\s?)?([A-Z][A-Z0-9_]*)=(.*)$/;

export function readEnvExample(path = join(import.meta.dirname, '..', '..', '.env.example')): ExampleEntry[] {
  const entries: ExampleEntry[] = [];
  let comment: string[] = [];
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((text, index) => {
      const entry = ENTRY.exec(text);
      if (entry) {
        entries.push({ name: entry[2], value: entry[3], commented: entry[1] !== undefined, comment: comment.join(' '), line: index + 1 });
        comment = [];
      } else if (text.startsWith('#')) {
        comment.push(text.replace(/^#\s?/, ''));
      } else {
        comment = [];
      }
    });
  return entries;
}

/** What `(default: X)` in an entry's comment says, if it says it. */
export const statedDefault = (entry: ExampleEntry) => /\(default: ([^)]*)\)\s*$/.exec(entry.comment)?.[1];
