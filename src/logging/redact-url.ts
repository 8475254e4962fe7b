import type { AppConfig } from '../config/app-config.js';

/** Parameters whose values are secrets by their name. */
const SECRET_NAME = /key|token|secret|signature|password|passwd|auth|session|code|credential/i;
/** The gateway's own keys, tokens, push secrets and console session tokens, wherever they stand in a part. */
const GATEWAY_SECRET = /(sk|adm)_tax_|whsec_|tdgs_/i;
/**
 * A long opaque run anywhere in a part, whatever stands around it (a `!`, a quote, a space): a 64-hex
 * signature, a console CSRF token (43 base64url characters, without a prefix of its own), a key without
 * its prefix. UUIDs (the ids in the gateway's paths) are taken out first: they are not secrets.
 */
const OPAQUE_RUN = /[A-Za-z0-9_\-+/.~]{32,}/;
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** What separates the parts of a URL that are judged one by one: path segments, parameters, names, values. */
const DELIMITERS = /([/?&;=#])/;
const REDACTED = '[redacted]';
/** A secret so short that it would match ordinary words is not looked for (the configuration asks for 16). */
const SHORTEST_SECRET = 8;

/** The configured secrets a URL must never carry into a log line or an answer. */
export function configuredSecrets(config: AppConfig): string[] {
  const values = [config.ADMIN_TOKEN, config.METRICS_TOKEN, config.BANK_WEBHOOK_SECRET, config.BANK_WEBHOOK_SECRET_PREVIOUS, config.OIDC_CLIENT_SECRET];
  return values.filter((value): value is string => typeof value === 'string' && value.length >= SHORTEST_SECRET);
}

/**
 * A part as it may be read: its valid percent-escapes decoded run by run (a stray `%zz` or a lone byte of
 * a character does not stop the rest being decoded), three times over for double encoding.
 */
function decoded(part: string, plusIsSpace: boolean): string {
  let text = plusIsSpace ? part.replace(/\+/g, ' ') : part;
  for (let round = 0; round < 3 && text.includes('%'); round += 1) {
    const next = text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) =>
          Number.parseInt(hex, 16) < 0x80 ? String.fromCharCode(Number.parseInt(hex, 16)) : escape,
        );
      }
    });
    if (next === text) break;
    text = next;
  }
  return text;
}

/** The URL redactor for this configuration: the one rule for log lines and problem bodies. */
export function urlRedactorFor(config: AppConfig): (url: string) => string {
  return urlRedactor(configuredSecrets(config));
}

/**
 * Whether a text is, contains or looks like a secret: one of the gateway's prefixes, a configured secret,
 * or a long opaque run. The rule for each part of a URL, and for a caller's X-Request-Id.
 */
export function secretCheck(secrets: readonly string[]): (text: string) => boolean {
  return (text) => GATEWAY_SECRET.test(text) || OPAQUE_RUN.test(text.replace(UUIDS, ' ')) || secrets.some((secret) => text.includes(secret));
}

/**
 * A request URL as it may be logged or named in an answer: every part of it (a path segment, a parameter
 * after `?`, `&` or `;`, a parameter's name or value) that is, or looks like, a key, token or secret,
 * judged after percent-decoding, becomes `[redacted]`, as does the value of a parameter named like a
 * secret. A configured secret that spans several parts (it contains `/` or `&`, say) leaves nothing of
 * the URL.
 */
export function urlRedactor(secrets: readonly string[]): (url: string) => string {
  const isSecret = secretCheck(secrets);
  return (url) => {
    const parts = url.split(DELIMITERS);
    let inQuery = false;
    for (let i = 0; i < parts.length; i += 2) {
      const delimiter = i > 0 ? parts[i - 1] : '';
      if (delimiter === '?') inQuery = true;
      if (parts[i] === '') continue;
      const text = decoded(parts[i], inQuery);
      const name = delimiter === '=' && i >= 2 ? decoded(parts[i - 2], inQuery) : null;
      if (isSecret(text) || (name !== null && SECRET_NAME.test(name))) parts[i] = REDACTED;
    }
    const redacted = parts.join('');
    const whole = decoded(redacted, false) + decoded(redacted, true);
    return secrets.some((secret) => whole.includes(secret)) ? REDACTED : redacted;
  };
}
