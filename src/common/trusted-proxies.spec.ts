import { TrustedProxies } from './trusted-proxies.js';

describe('TrustedProxies', () => {
  it('trusts the listed addresses, ranges and named ranges, IPv4-mapped peers included', () => {
    const trusted = TrustedProxies.parse('10.0.0.7, 192.0.2.0/24, loopback, 2001:db8::/32');
    for (const address of ['10.0.0.7', '::ffff:10.0.0.7', '192.0.2.200', '127.0.0.1', '::1', '2001:db8::1']) expect(trusted.trusts(address)).toBe(true);
    for (const address of ['10.0.0.8', '192.0.3.1', '203.0.113.9', 'not-an-address', undefined]) expect(trusted.trusts(address)).toBe(false);
    expect(TrustedProxies.parse('private').trusts('172.20.1.1')).toBe(true);
    expect(TrustedProxies.parse('private').trusts('172.32.0.1')).toBe(false);
  });

  it('trusts nobody when unset, and names the entries it cannot read', () => {
    const none = TrustedProxies.parse(undefined);
    expect(none.trusts('127.0.0.1')).toBe(false);
    expect(none.fastifyOption()).toBe(false);
    expect(TrustedProxies.invalidEntries('10.0.0.1, everyone, 10.0.0.0/33,, private')).toEqual(['everyone', '10.0.0.0/33', '']);
  });
});
