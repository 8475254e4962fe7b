#!/usr/bin/env node
/**
 * Regenerates src/generated/openapi.ts from the OpenAPI document a gateway serves.
 *
 *   node scripts/generate-types.mjs [source] [--stdout]
 *
 * `source` is the URL of a running gateway's document (default http://localhost:3000/docs/openapi.json)
 * or the path of a saved copy. `--stdout` prints the result instead of writing the file: the e2e test
 * compares that with the checked-in file, so what it checks is exactly what this script writes.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

const OUTPUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'generated', 'openapi.ts');
const DEFAULT_SOURCE = 'http://localhost:3000/docs/openapi.json';

async function readDocument(source) {
  if (!/^https?:\/\//.test(source)) return JSON.parse(await readFile(source, 'utf8'));
  const response = await fetch(source);
  if (!response.ok) throw new Error(`GET ${source} answered ${response.status}`);
  return response.json();
}

async function main() {
  const args = process.argv.slice(2);
  const toStdout = args.includes('--stdout');
  const source = args.find((arg) => !arg.startsWith('--')) ?? DEFAULT_SOURCE;
  const document = await readDocument(source);
  // The CLI's own composition (header + printed AST), so `npx openapi-typescript` gives the same file.
  const types = COMMENT_HEADER + astToString(await openapiTS(document));
  if (toStdout) {
    process.stdout.write(types);
    return;
  }
  await writeFile(OUTPUT, types, 'utf8');
  process.stderr.write(`Wrote ${OUTPUT} from ${source}\n`);
}

main().catch((error) => {
  process.stderr.write(`generate-types: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
