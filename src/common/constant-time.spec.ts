import { tokensMatch } from './constant-time.js';

describe('tokensMatch', () => {
  it('matches only the exact token, whatever the lengths', () => {
    expect(tokensMatch('correct-horse-battery', 'correct-horse-battery')).toBe(true);
    expect(tokensMatch('correct-horse-batterY', 'correct-horse-battery')).toBe(false);
    expect(tokensMatch('correct', 'correct-horse-battery')).toBe(false);
    expect(tokensMatch('', 'correct-horse-battery')).toBe(false);
  });
});
