import { Logger, Provider } from '@nestjs/common';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../config/app-config';

export const ADMIN_TOKEN = Symbol('ADMIN_TOKEN');

/** ADMIN_TOKEN, or one made for this process and printed once so an operator can sign in. */
export const adminTokenProvider: Provider = {
  provide: ADMIN_TOKEN,
  inject: [AppConfig],
  useFactory: (config: AppConfig): string => {
    if (config.ADMIN_TOKEN) return config.ADMIN_TOKEN;
    const token = randomBytes(32).toString('base64url');
    // Deliberately the one secret ever written out: there is no other way to hand it to the operator.
    process.stdout.write(`\nADMIN_TOKEN is not set; this process generated one (valid until it stops):\n\n  ${token}\n\n`);
    new Logger('Admin').warn('ADMIN_TOKEN is not set: a token was generated and printed once; set ADMIN_TOKEN to keep one across restarts and instances');
    return token;
  },
};

/** Compares digests, so neither the content nor the length of the real token leaks through timing. */
export function tokensMatch(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
