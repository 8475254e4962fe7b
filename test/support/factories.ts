import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { TEST_ADMIN_TOKEN } from './test-app';

export const adminHeaders = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

export interface IssuedKey {
  id: string;
  source: string;
  key: string;
}

export function uniqueSource(prefix = 'src'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Issues a key through the admin API, as an administrator would. */
export async function newSourceWithKey(app: NestFastifyApplication, source = uniqueSource(), extra: Record<string, unknown> = {}): Promise<IssuedKey> {
  const res = await app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source, ...extra } });
  if (res.statusCode !== 201) throw new Error(`issuing a key failed: ${res.statusCode} ${res.body}`);
  const body = res.json();
  return { id: body.id, source, key: body.key };
}
