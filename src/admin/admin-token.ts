import { Logger, Provider } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { AppConfig } from '../config/app-config.js';

export const ADMIN_TOKEN = Symbol('ADMIN_TOKEN');
const STRONG_ADMIN_TOKEN_LENGTH = 32;

/**
 * ADMIN_TOKEN (the gateway's start-up fills it from DATA_DIR when unset), or, for an app built without
 * one, a token nobody knows: the admin endpoints then stay closed.
 */
export const adminTokenProvider: Provider = {
  provide: ADMIN_TOKEN,
  inject: [AppConfig],
  useFactory: (config: AppConfig): string => {
    if (config.ADMIN_TOKEN) {
      // The lockout slows wrong guesses but never refuses the right token, so its length is what stops guessing.
      if (config.ADMIN_TOKEN.length < STRONG_ADMIN_TOKEN_LENGTH) {
        new Logger('Admin').warn(`ADMIN_TOKEN has fewer than ${STRONG_ADMIN_TOKEN_LENGTH} characters: use a long random one (a generated token has 43)`);
      }
      return config.ADMIN_TOKEN;
    }
    new Logger('Admin').warn('ADMIN_TOKEN is not set: the admin endpoints accept no token');
    return randomBytes(32).toString('base64url');
  },
};
