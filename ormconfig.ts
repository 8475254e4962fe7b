import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/app-config.js';
import { locateDatabase } from './src/database/database-location.js';
import { buildDataSourceOptions } from './src/database/typeorm-options.js';
import { loadEnvFile } from './src/startup/env-file.js';

/**
 * The TypeORM CLI's data source (`npm run migration:generate -- src/database/migrations/Name`), built
 * by the same options builder as the application. Without DATABASE_URL it uses the embedded cluster.
 */
export default (async () => {
  loadEnvFile();
  const { url } = await locateDatabase(loadConfig());
  return new DataSource(buildDataSourceOptions(url));
})();
