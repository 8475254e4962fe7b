import { displayParts, generateOpaqueToken, hashOpaqueToken } from '../common/opaque-token.js';

export const API_KEY_PREFIX = 'sk_tax_';

const WELL_FORMED = /^sk_tax_[0-9A-Za-z]{32,128}$/;

/** A new key `sk_tax_<43 × base62>` (256 bits). */
export const generateApiKey = (): string => generateOpaqueToken(API_KEY_PREFIX);

export function isWellFormedApiKey(value: unknown): value is string {
  return typeof value === 'string' && WELL_FORMED.test(value);
}

export const hashApiKey = hashOpaqueToken;

export { displayParts };
