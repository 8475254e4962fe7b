/** Query parameters whose values are secrets by their name. */
const SECRET_NAME = /key|token|secret|signature|password|passwd|auth|session|code|credential/i;
/** Values that are secrets whatever they are called: the gateway's own keys and tokens, and long opaque strings. */
const SECRET_VALUE = /^(sk|adm)_tax_|^whsec_|^[A-Za-z0-9_\-+/=.]{32,}$/;

/**
 * A request URL as it may be logged: the value of every query parameter that is, or looks like, a key or
 * token replaced with `[redacted]` (an API key sent as `?api_key=…` by mistake must not reach the log).
 */
export function redactUrl(url: string): string {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const parameters = url
    .slice(query + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals === -1) return pair;
      const name = pair.slice(0, equals);
      let value = pair.slice(equals + 1);
      try {
        value = decodeURIComponent(value.replace(/\+/g, ' '));
      } catch {
        // Kept as sent; judged as it is.
      }
      return SECRET_NAME.test(name) || SECRET_VALUE.test(value) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, query)}?${parameters.join('&')}`;
}
