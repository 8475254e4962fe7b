import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../common/app-error.js';
import { isPublicAddress } from './public-address.js';

export const MAX_URL_LENGTH = 2048;

const refuse = (message: string) => AppError.validation([{ field: 'url', message }]);

/** Where a refusal points someone trying push notifications on their own machine. */
const LOCAL_TRIALS = 'http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials';

/**
 * What makes `value` no push endpoint URL whatever the configuration, or null. The body's validation asks
 * this, so that a bad URL is named with the body's other bad fields; checkEndpointUrl asks it again first.
 */
export function endpointUrlProblem(value: string): string | null {
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must be an https:// URL (${LOCAL_TRIALS})`;
  if (url.username || url.password) return 'must not contain credentials';
  // A fragment is never sent to the receiver: it would only make a second spelling of the same URL.
  if (url.href.includes('#')) return 'must not contain a fragment (#…)';
  return null;
}

/**
 * The URL rules of push endpoints (README, "Push notifications"), checked when an endpoint is created or its URL changed; answers the URL as it
 * is stored and called, normalised by the WHATWG parser the sender uses too (so what an administrator
 * reads is where messages go: `https://a.example\@b.example/` is stored as `https://a.example/@b.example/`).
 * The address check here only gives an early, clear answer: DNS can change, so the sender checks the
 * address it actually connects to again on every attempt. Ports: 443, or any from 1024 up; the well-known
 * ports below it are other services (SSH, SMTP, …) that no webhook receiver needs.
 */
export async function checkEndpointUrl(value: string, allowPrivate: boolean): Promise<string> {
  const problem = endpointUrlProblem(value);
  if (problem) throw refuse(problem);
  const url = new URL(value);
  if (url.protocol !== 'https:' && !allowPrivate) throw refuse(`must be an https:// URL (${LOCAL_TRIALS})`);
  if (allowPrivate) return url.href;
  if (url.port !== '' && Number(url.port) < 1024) throw refuse('must use port 443 or a port from 1024 up');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await resolve(host);
  if (addresses.length === 0) throw refuse('must name a host that resolves');
  if (!addresses.every(isPublicAddress)) throw refuse(`must not point to a loopback, private, link-local or otherwise non-public address (${LOCAL_TRIALS})`);
  if (url.href.length > MAX_URL_LENGTH) throw refuse(`must be at most ${MAX_URL_LENGTH} characters`);
  return url.href;
}

/** Characters RFC 3986 calls unreserved: percent-encoding one of them does not change the URL. */
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Escapes of unreserved characters decoded, the others' hex in upper case (RFC 3986, 6.2.2). */
function normalisedEscapes(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
}

/** An address as one spelling: IPv6 compressed, an IPv4-mapped IPv6 address as the IPv4 address it reaches. */
function normalisedAddress(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  return ipaddr.isValid(bare) ? ipaddr.process(bare).toString() : bare;
}

/**
 * What two spellings of one receiver share: scheme, port (the default one written out), path and query
 * with unreserved escapes decoded, dot segments resolved, runs of slashes and a trailing slash dropped,
 * an empty query dropped; and every address the host is or resolves to. Null for what is not a URL.
 */
async function receiverOf(value: string): Promise<{ at: string; addresses: Set<string> } | null> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '');
  // Parsed again once the escapes are decoded and the slashes collapsed, so dot segments they revealed are resolved too.
  const collapsed = normalisedEscapes(url.pathname).replace(/\/{2,}/g, '/');
  const path = new URL(collapsed, 'http://path.invalid').pathname.replace(/(.)\/+$/, '$1');
  const query = url.search === '?' ? '' : normalisedEscapes(url.search);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = new Set([normalisedAddress(host), ...(isIP(host) ? [] : (await resolve(host)).map(normalisedAddress))]);
  return { at: `${url.protocol}//:${port}${path}${query}`, addresses };
}

/**
 * Which of `candidates` reach the same receiver as `url`: the one comparison of endpoint URLs, so an
 * operator's stop cannot be sidestepped by another spelling (`HTTP://Host:443/a/`, `/%61`, `//a`, `/a?`,
 * or `localhost` for 127.0.0.1). Hosts that share an address count as one: a stop is per source and
 * path, and a client that moved its receiver to another name on the same machine is still that receiver.
 */
export async function sameReceiverAs<T extends { url: string }>(url: string, candidates: readonly T[]): Promise<T[]> {
  if (candidates.length === 0) return [];
  const target = await receiverOf(url);
  const matches: T[] = [];
  for (const candidate of candidates) {
    if (candidate.url === url) {
      matches.push(candidate);
      continue;
    }
    const other = target && (await receiverOf(candidate.url));
    if (other && other.at === target.at && [...other.addresses].some((address) => target.addresses.has(address))) matches.push(candidate);
  }
  return matches;
}

async function resolve(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
  } catch {
    return [];
  }
}
