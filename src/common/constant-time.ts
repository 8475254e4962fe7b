import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares digests, so neither the content nor the length of the expected secret leaks through timing. */
export function tokensMatch(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
