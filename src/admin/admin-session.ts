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

/**
 * Where browsers reach the gateway: PUBLIC_URL when it is set, otherwise what this request says (its
 * scheme, behind trusted proxies the forwarded one, and its Host header).
 */
export function publicOrigin(publicUrl: string | undefined, request: { protocol: string; host: string }): string {
  return publicUrl ?? `${request.protocol}://${request.host}`;
}
