import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
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

async function resolve(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
  } catch {
    return [];
  }
}
