import { existsSync } from 'node:fs';

/** Loads `.env` from the working directory when there is one; variables already set in the environment win. */
export function loadEnvFile(path = '.env'): void {
  if (existsSync(path)) process.loadEnvFile(path);
}
