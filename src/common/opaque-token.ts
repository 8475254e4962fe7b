import { createHash, randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 base62 characters carry 256 bits, beyond the reach of guessing. */
const RANDOM_LENGTH = 43;

/** `<prefix><43 × base62>`, each character drawn uniformly (randomInt has no modulo bias). */
export function generateOpaqueToken(prefix: string): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(BASE62.length)];
  return prefix + random;
}

/**
 * SHA-256, unsalted: a token already carries 256 random bits, so a slow or salted hash would add nothing
 * but would make the look-up by hash impossible.
 */
export function hashOpaqueToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** What may be shown of a token after it was issued: its first 12 and last 4 characters. */
export function displayParts(token: string): { prefix: string; last4: string } {
  return { prefix: token.slice(0, 12), last4: token.slice(-4) };
}
