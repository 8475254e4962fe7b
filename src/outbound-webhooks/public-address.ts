import ipaddr from 'ipaddr.js';

/** IPv4-compatible IPv6 (::a.b.c.d, deprecated by RFC 4291): ipaddr.js calls some of it unicast, yet it embeds an IPv4 host. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * True for an address on the public internet; false for anything else, including what is not an IP.
 * ipaddr.js classifies every special-purpose range of IANA's registries (loopback, private, carrier-grade
 * NAT, link-local with the cloud metadata addresses, multicast, documentation, benchmarking, reserved,
 * 6to4, Teredo, NAT64 …); only what it leaves as plain `unicast` is public. An IPv4-mapped IPv6 address
 * is judged as the IPv4 address it connects to.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return false;
  const parsed = ipaddr.process(bare);
  if (parsed.range() !== 'unicast') return false;
  return !(parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).match(IPV4_COMPATIBLE));
}
