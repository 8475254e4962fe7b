import { cookiesMustBeSecure, cookieValue, loginCookie, publicUrlWarning, sessionCookie } from './admin-session.js';

describe('console session cookies', () => {
  it('are HttpOnly, SameSite=Strict and limited to /admin, and Secure when asked', () => {
    expect(sessionCookie('tdgs_abc', 28800, true)).toBe('tdg_admin_session=tdgs_abc; Path=/admin; Max-Age=28800; HttpOnly; SameSite=Strict; Secure');
    expect(sessionCookie('', 0, false)).toBe('tdg_admin_session=; Path=/admin; Max-Age=0; HttpOnly; SameSite=Strict');
  });

  it('bind a sign-in with a Lax cookie for /admin/auth only, which the provider’s cross-site redirect back carries', () => {
    expect(loginCookie('st4te', true)).toBe('tdg_admin_login=st4te; Path=/admin/auth; Max-Age=600; HttpOnly; SameSite=Lax; Secure');
  });

  it.each([
    ['https', 'admin.example.com', true],
    ['https', '127.0.0.1', true],
    ['http', 'admin.example.com', true],
    ['http', '10.0.0.7', true],
    ['http', '127.0.0.1', false],
    ['http', 'localhost', false],
    ['http', '::1', false],
  ])('are Secure over %s on %s: %s', (protocol, host, secure) => {
    expect(cookiesMustBeSecure(protocol, host)).toBe(secure);
  });

  it('reads one cookie out of a Cookie header', () => {
    expect(cookieValue('a=1; tdg_admin_session=tdgs_x=y; b=2', 'tdg_admin_session')).toBe('tdgs_x=y');
    expect(cookieValue('tdg_admin_sessionx=1', 'tdg_admin_session')).toBeUndefined();
    expect(cookieValue(undefined, 'tdg_admin_session')).toBeUndefined();
  });
});

describe('publicUrlWarning', () => {
  it.each(['0.0.0.0', '::', '10.0.0.7', 'gateway.internal'])('warns when PUBLIC_URL is unset and the gateway listens on %s', (HOST) => {
    expect(publicUrlWarning({ HOST })).toMatch(
      new RegExp(`^PUBLIC_URL is not set and the gateway listens on ${HOST.replace(/\./g, '\\.')}: .*Host header.*required behind a proxy`),
    );
  });

  it.each(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost'])('says nothing on the loopback address %s', (HOST) => {
    expect(publicUrlWarning({ HOST })).toBeNull();
  });

  it('says nothing once PUBLIC_URL is set', () => {
    expect(publicUrlWarning({ HOST: '0.0.0.0', PUBLIC_URL: 'https://gateway.example.com' })).toBeNull();
  });
});
