import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { isIP, LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { isPublicAddress } from './public-address.js';

/** Why an attempt failed, recorded with it; null for an answer that arrived (its status says the rest). */
export type AttemptError = 'timeout' | 'blocked_address' | 'dns_failure' | 'connection_failed' | 'tls_failure' | 'redirect' | 'http_error' | 'shutdown';

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: AttemptError | null;
  /** For a 429 or 503: how long the receiver asked us to wait, in seconds. */
  retryAfterSeconds: number | null;
  /** The first characters of the answer, for the delivery log; never more. */
  excerpt: string | null;
  durationMs: number;
}

export interface SenderOptions {
  timeoutMs: number;
  connectionsPerEndpoint: number;
  allowPrivate: boolean;
}

/** How much of a response body is read at all (the rest is discarded unread), and how much is kept. */
const MAX_BODY_READ = 4096;
const EXCERPT_LENGTH = 256;

class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
}

/**
 * Resolves like the system resolver, then refuses unless every address is public. Used as the socket's
 * own lookup, so the address checked is the address connected to: a name that resolved to a public
 * address when the endpoint was registered and to 127.0.0.1 now (DNS rebinding) is still refused.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, options, (error, address, family) => {
    if (error) return callback(error, address, family);
    const resolved: LookupAddress[] = Array.isArray(address) ? address : [{ address, family: family ?? 4 }];
    if (!resolved.every((entry) => isPublicAddress(entry.address))) {
      return callback(new BlockedAddressError(`${hostname} resolves to a non-public address`), address, family);
    }
    callback(null, address, family);
  });
};

export function retryAfterSeconds(header: string | string[] | undefined, now = Date.now()): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  if (/^\d{1,9}$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

function classify(error: unknown, shuttingDown: boolean): AttemptError {
  if (shuttingDown) return 'shutdown';
  const { name, code } = (error ?? {}) as { name?: string; code?: string };
  if (code === 'EBLOCKEDADDRESS' || error instanceof BlockedAddressError) return 'blocked_address';
  if (name === 'TimeoutError' || name === 'AbortError' || /TIMEOUT/.test(code ?? '')) return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return 'dns_failure';
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(code ?? '')) return 'tls_failure';
  return 'connection_failed';
}

/**
 * Sends signed messages over one connection pool per instance: hard timeout, no redirects, bounded reads.
 * Each attempt's hard timeout is an AbortController of its own and a timer cleared when the attempt ends;
 * close() destroys the pool, which fails the attempts in flight. This is the design on every Node
 * version, not a workaround to switch off on newer ones: an `AbortSignal.timeout(…)` with a listener
 * stays alive until its timer fires, whatever became of the attempt (about 1 KB each for the full
 * timeout, on Node 20 and 24 alike), where a cleared timer frees it at once. Combining it with a shutdown
 * signal (`AbortSignal.any`) would add a Node 20 leak on top: every such signal stays in the long-lived
 * shutdown signal's set of dependants for the life of the process (nodejs/node#55351; 24.21 prunes them).
 */
export class DeliverySender {
  private readonly agent: Agent;
  private closing = false;

  constructor(private readonly options: SenderOptions) {
    this.agent = new Agent({
      connections: options.connectionsPerEndpoint,
      connect: { timeout: options.timeoutMs, ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }) },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const done = (result: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...result, durationMs: Math.round(performance.now() - started) });
    const failed = (error: AttemptError) => done({ ok: false, status: null, error, retryAfterSeconds: null, excerpt: null });
    if (this.closing) return failed('shutdown');
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    // A literal address never goes through the lookup above, so it is checked here.
    if (!this.options.allowPrivate && isIP(host) && !isPublicAddress(host)) return failed('blocked_address');
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DOMException('The delivery attempt timed out', 'TimeoutError')), this.options.timeoutMs);
    try {
      // undici's request() follows no redirect: a 3xx comes back as it is, and counts as a failure.
      const response = await request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal: controller.signal });
      const excerpt = await this.readExcerpt(response.body);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      const redirect = response.statusCode >= 300 && response.statusCode < 400;
      const asksToWait = response.statusCode === 429 || response.statusCode === 503;
      return done({
        ok,
        status: response.statusCode,
        error: ok ? null : redirect ? 'redirect' : 'http_error',
        retryAfterSeconds: asksToWait ? retryAfterSeconds(response.headers['retry-after']) : null,
        excerpt,
      });
    } catch (error) {
      return failed(classify(error, this.closing));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads at most a few KB and drops the connection's remaining bytes rather than downloading them. */
  private async readExcerpt(body: AsyncIterable<Buffer> & { destroy: () => void }): Promise<string | null> {
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of body) {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= MAX_BODY_READ) {
        body.destroy();
        break;
      }
    }
    const text = Buffer.concat(chunks)
      .subarray(0, MAX_BODY_READ)
      .toString('utf8')
      .replace(/[\u0000-\u001f\u007f]+/g, ' ')
      .trim();
    return text ? text.slice(0, EXCERPT_LENGTH) : null;
  }

  /** Aborts attempts still running (they report `shutdown`) and closes the connections. */
  async close(): Promise<void> {
    this.closing = true;
    await this.agent.destroy().catch(() => undefined);
  }
}
