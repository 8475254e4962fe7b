import { checkEndpointUrl, sameReceiverAs } from './endpoint-url.js';

const stopped = { id: 'stopped', url: 'http://127.0.0.1:38200/hook-a' };
const matches = async (url: string, candidate = stopped) => (await sameReceiverAs(url, [candidate])).length === 1;

describe('sameReceiverAs', () => {
  it.each([
    ['the exact URL', 'http://127.0.0.1:38200/hook-a'],
    ['an empty query', 'http://127.0.0.1:38200/hook-a?'],
    ['localhost for 127.0.0.1', 'http://localhost:38200/hook-a'],
    ['a trailing slash', 'http://127.0.0.1:38200/hook-a/'],
    ['an unreserved character percent-encoded', 'http://127.0.0.1:38200/%68ook-a'],
    ['lower-case hex in an escape of an unreserved character', 'http://127.0.0.1:38200/hook%2da'],
    ['a doubled slash', 'http://127.0.0.1:38200//hook-a'],
    ['dot segments', 'http://127.0.0.1:38200/x/../hook-a/.'],
    ['an encoded dot segment', 'http://127.0.0.1:38200/x/%2e%2e/hook-a'],
    ['the scheme and host in upper case', 'HTTP://127.0.0.1:38200/hook-a'],
    ['an IPv4-mapped IPv6 address', 'http://[::ffff:127.0.0.1]:38200/hook-a'],
    ['another spelling of the IPv4 address', 'http://0x7f.1:38200/hook-a'],
  ])('finds %s the same receiver', async (_what, url) => {
    expect(await matches(url)).toBe(true);
  });

  it('writes out the default port and decodes unreserved escapes in the query, but keeps the others', async () => {
    const https = { id: 'h', url: 'https://localhost/in?k=v%2Fw' };
    expect(await matches('HTTPS://LocalHost:443/in?%6B=v%2fw', https)).toBe(true);
    expect(await matches('https://localhost/in?k=v/w', https)).toBe(false);
  });

  it.each([
    ['another path', 'http://127.0.0.1:38200/hook-b'],
    ['a path differing in case', 'http://127.0.0.1:38200/Hook-a'],
    ['another port', 'http://127.0.0.1:38201/hook-a'],
    ['another scheme', 'https://127.0.0.1:38200/hook-a'],
    ['another address', 'http://127.0.0.2:38200/hook-a'],
    ['another query', 'http://127.0.0.1:38200/hook-a?x=1'],
    ['what is not a URL', 'not a url'],
  ])('tells %s apart', async (_what, url) => {
    expect(await matches(url)).toBe(false);
  });

  it('answers the candidates that match, in their order', async () => {
    const candidates = [
      { id: 'a', url: 'http://127.0.0.1:38200/hook-a/' },
      { id: 'b', url: 'http://127.0.0.1:38200/hook-b' },
      { id: 'c', url: 'http://localhost:38200//hook-a' },
    ];
    expect((await sameReceiverAs(stopped.url, candidates)).map((c) => c.id)).toEqual(['a', 'c']);
  });
});

describe('checkEndpointUrl', () => {
  it.each(['http://127.0.0.1:38200/hook-a#x', 'http://127.0.0.1:38200/hook-a#'])('refuses a fragment (%s) with the field path', async (url) => {
    await expect(checkEndpointUrl(url, true)).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      errors: [{ field: 'url', message: 'must not contain a fragment (#…)' }],
    });
  });
});
