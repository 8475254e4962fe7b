/** The console session's cookie: an opaque token whose hash the admin_sessions table keeps. */
export const SESSION_COOKIE = 'tdg_admin_session';

/** The value of `name` in a Cookie header, if any. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const [key, ...value] = pair.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/**
 * The Set-Cookie value of a session (or, with `value` empty and `maxAgeSeconds` 0, of its removal):
 * HttpOnly so no script reads it, SameSite=Strict so no other site's page sends it, Path=/admin so no
 * other route sees it, and Secure unless the console is served over plain HTTP on the loopback interface.
 */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return [`${SESSION_COOKIE}=${value}`, 'Path=/admin', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])].join('; ');
}

/** Binds a sign-in's `state` to the browser that started it, for the ten minutes a sign-in may take. */
export const LOGIN_COOKIE = 'tdg_admin_login';

/**
 * SameSite=Lax, not Strict: the provider sends the browser back with a cross-site navigation, on which a
 * Strict cookie would not be sent. It carries only the state, which is worth nothing without the browser.
 */
export function loginCookie(state: string, secure: boolean, maxAgeSeconds = 600): string {
  return [`${LOGIN_COOKIE}=${state}`, 'Path=/admin/auth', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax', ...(secure ? ['Secure'] : [])].join('; ');
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/**
 * Secure, unless the console is reached over plain HTTP on a loopback address (a local trial), where a
 * browser would drop a Secure cookie and nobody else can listen in. Plain HTTP anywhere else still gets
 * Secure cookies: single sign-on then simply does not work until TLS is in front.
 */
export function cookiesMustBeSecure(protocol: string, hostname: string): boolean {
  return protocol !== 'http' || !LOOPBACK_HOSTS.has(hostname);
}

/** Whether `host` (HOST, the address the gateway listens on) can be reached only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/**
 * Without PUBLIC_URL the console's origin check and the sign-in's redirect take each request's Host header
 * (and, behind trusted proxies, the forwarded scheme) as the gateway's origin: whoever can reach a
 * non-loopback address can send any Host. The warning at start when that is the case; null otherwise.
 */
export function publicUrlWarning(config: { PUBLIC_URL?: string; HOST: string }): string | null {
  if (config.PUBLIC_URL !== undefined || isLoopbackHost(config.HOST)) return null;
  return `PUBLIC_URL is not set and the gateway listens on ${config.HOST}: the console's origin check and the sign-in redirect trust each request's Host header; set PUBLIC_URL to the origin browsers use (required behind a proxy)`;
}

/**
 * Where browsers reach the gateway: PUBLIC_URL when it is set, otherwise what this request says (its
 * scheme, behind trusted proxies the forwarded one, and its Host header).
 */
export function publicOrigin(publicUrl: string | undefined, request: { protocol: string; host: string }): string {
  return publicUrl ?? `${request.protocol}://${request.host}`;
}
