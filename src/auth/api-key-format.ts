import { createHash, randomInt } from 'node:crypto';

export const API_KEY_PREFIX = 'sk_tax_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 base62 characters carry 256 bits; the contract asks for at least 32 (≥ 190 bits). */
const RANDOM_LENGTH = 43;
const WELL_FORMED = /^sk_tax_[0-9A-Za-z]{32,128}$/;

/** A new key `sk_tax_<43 × base62>`, each character drawn uniformly (randomInt has no modulo bias). */
export function generateApiKey(): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(BASE62.length)];
  return API_KEY_PREFIX + random;
}

export function isWellFormedApiKey(value: unknown): value is string {
  return typeof value === 'string' && WELL_FORMED.test(value);
}

/**
 * SHA-256, unsalted: the key already carries 256 random bits, so a slow or salted hash would add
 * nothing but would make the lookup by hash impossible.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** What may be shown of a key after it was issued: its first 12 and last 4 characters. */
export function displayParts(key: string): { prefix: string; last4: string } {
  return { prefix: key.slice(0, 12), last4: key.slice(-4) };
}
