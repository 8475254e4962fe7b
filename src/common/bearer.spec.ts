import { bearerCredential } from './bearer.js';

describe('bearerCredential', () => {
  it.each(['Bearer tok', 'bearer tok', 'BEARER tok', 'bEaReR tok', 'Bearer  tok', 'Bearer tok '])('reads %j whatever the case of the scheme', (header) => {
    expect(bearerCredential(header)).toBe('tok');
  });

  it.each([undefined, '', 'Bearer', 'Bearer ', 'Basic dG9rOg==', 'Bearertok', 'Bearer tok en', 'Token tok'])('finds no credential in %j', (header) => {
    expect(bearerCredential(header)).toBeUndefined();
  });
});
