import { AppConfig } from '../config/app-config.js';
import { SecretSource, StartupSecrets } from './generated-secrets.js';

// "generated" only on the start that made the file: on every later one the value is the same as before.
const describe = (source: SecretSource) =>
  'variable' in source ? `from ${source.variable}` : source.generated ? `in ${source.file} (generated)` : `read from ${source.file}`;

/** The last lines of start-up: where to go next and where the secrets are, never the secrets themselves. */
export function startupBanner(config: AppConfig, port: number, secrets: StartupSecrets): string {
  const host = ['0.0.0.0', '::'].includes(config.HOST) ? 'localhost' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  const base = `http://${host}:${port}`;
  return [
    '',
    `Tax Document Gateway is ready on ${base}`,
    `  Admin console        ${base}/admin`,
    `  API documentation    ${base}/docs`,
    `  Admin token          ${describe(secrets.adminToken)}`,
    `  Bank webhook secret  set, ${describe(secrets.webhookSecret)}`,
    `  Archive signing key  ${describe(secrets.archiveSigningKey)}`,
    '',
  ].join('\n');
}
