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
