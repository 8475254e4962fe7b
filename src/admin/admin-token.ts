import { Logger, Provider } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { AppConfig } from '../config/app-config';

export const ADMIN_TOKEN = Symbol('ADMIN_TOKEN');

/**
 * ADMIN_TOKEN (the gateway's start-up fills it from DATA_DIR when unset), or, for an app built without
 * one, a token nobody knows: the admin endpoints then stay closed.
 */
export const adminTokenProvider: Provider = {
  provide: ADMIN_TOKEN,
  inject: [AppConfig],
  useFactory: (config: AppConfig): string => {
    if (config.ADMIN_TOKEN) return config.ADMIN_TOKEN;
    new Logger('Admin').warn('ADMIN_TOKEN is not set: the admin endpoints accept no token');
    return randomBytes(32).toString('base64url');
  },
};
