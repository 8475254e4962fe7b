import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The names TRUSTED_PROXIES takes besides addresses and CIDR ranges. */
const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1, as a dual-stack socket reports IPv4 peers) as the IPv4 address it is. */
const parse = (address: string) => ipaddr.process(address);

function parseEntry(entry: string): Range[] {
  const named = NAMED_RANGES[entry.toLowerCase()];
  if (named) return named.map((cidr) => ipaddr.parseCIDR(cidr));
  if (entry.includes('/')) return [ipaddr.parseCIDR(entry)];
  const address = parse(entry);
  return [[address, address.kind() === 'ipv4' ? 32 : 128]];
}

/**
 * TRUSTED_PROXIES (README, "Configuration"): the peers whose X-Forwarded-For is believed. Fastify takes the client
 * address from the header only through trusted peers (the rightmost address that is not itself trusted);
 * from anyone else the header is ignored.
 */
export class TrustedProxies {
  private constructor(private readonly ranges: Range[]) {}

  /** Comma-separated addresses, CIDR ranges and the names loopback, private, linklocal; empty: none. Throws on anything else. */
  static parse(list: string | undefined): TrustedProxies {
    const entries = (list ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    return new TrustedProxies(entries.flatMap(parseEntry));
  }

  /** The entries of `list` that are not an address, a CIDR range or a known name. */
  static invalidEntries(list: string): string[] {
    return list
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => {
        try {
          return entry === '' || parseEntry(entry).length === 0;
        } catch {
          return true;
        }
      });
  }

  get none(): boolean {
    return this.ranges.length === 0;
  }

  trusts(address: string | undefined): boolean {
    if (!address || this.none || !ipaddr.isValid(address)) return false;
    const parsed = parse(address);
    return this.ranges.some(([range, bits]) => parsed.kind() === range.kind() && parsed.match(range, bits));
  }

  /** Fastify's `trustProxy` option: none (false), or a function asked of each peer on the way back. */
  fastifyOption(): false | ((address: string) => boolean) {
    return this.none ? false : (address: string) => this.trusts(address);
  }
}
