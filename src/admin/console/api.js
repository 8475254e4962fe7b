// Who is signed in, and every call the console makes to the admin REST API.

// sessionStorage: scoped to this tab and gone when it closes. Never localStorage, a cookie or a URL, so the
// token is not sent anywhere by the browser on its own and does not end up in history or logs.
const TOKEN_STORAGE_KEY = 'tdg.adminToken';
const ROLE_RANK = { viewer: 1, operator: 2, admin: 3 };
const FIELD_LABELS = {
  source: 'Source',
  name: 'Name',
  expiresAt: 'Expires',
  gracePeriodSeconds: 'Grace period',
  email: 'Email',
  role: 'Role',
  documentId: 'Document',
  providerReference: 'Provider reference',
};

/**
 * The signed-in administrator. With a token (typed into this tab) every call carries it; with a console
 * session the browser sends the HttpOnly cookie and writes carry the session's CSRF token, kept in memory only.
 */
export const session = { token: null, csrfToken: null, me: null };

export class ApiError extends Error {
  constructor(status, detail, errors = [], retryAfter = null) {
    super(detail);
    this.status = status;
    this.errors = errors;
    this.retryAfter = retryAfter;
  }
}

export const storedToken = () => sessionStorage.getItem(TOKEN_STORAGE_KEY);
export const keepToken = (token) => sessionStorage.setItem(TOKEN_STORAGE_KEY, token);
export const forgetToken = () => sessionStorage.removeItem(TOKEN_STORAGE_KEY);

/** Whether the signed-in administrator's role allows what needs `role`. The server decides; this only hides. */
export function can(role) {
  return Boolean(session.me) && ROLE_RANK[session.me.role] >= ROLE_RANK[role];
}

/** `path` with the non-empty `params` as its query string. */
export function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  const text = query.toString();
  return text ? `${path}${path.includes('?') ? '&' : '?'}${text}` : path;
}

export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  // The page's Referrer-Policy makes the browser send `Origin: null`, so only this token passes the CSRF check.
  else if (session.csrfToken && method !== 'GET') headers['X-CSRF-Token'] = session.csrfToken;
  // A token is the whole credential: no cookie goes with it. Without one the session cookie is the credential.
  const init = { method, headers, cache: 'no-store', credentials: session.token ? 'omit' : 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'The gateway could not be reached. Check the connection and try again.');
  }
  const payload = response.status === 204 ? null : await response.json().catch(() => null);
  if (response.ok) return payload;
  const detail = typeof payload?.detail === 'string' ? payload.detail : `The request failed (HTTP ${response.status}).`;
  const errors = Array.isArray(payload?.errors) ? payload.errors : [];
  throw new ApiError(response.status, detail, errors, response.headers.get('Retry-After'));
}

export function rateLimitMessage(error) {
  const wait = error.retryAfter ? `in ${error.retryAfter} seconds` : 'in a minute';
  return `Too many failed admin sign-ins from this address: the gateway refuses admin requests for now. Try again ${wait}.`;
}

/** `text` ending with a full stop, so that another sentence can follow it. */
export function sentence(text) {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** What to tell a person about a failed call: the gateway's own words (never a stack trace; it sends none). */
export function explain(error) {
  if (error.status === 429) return rateLimitMessage(error);
  const fields = (error.errors ?? []).map((e) => `${FIELD_LABELS[e.field] ?? e.field}: ${e.message}`);
  return fields.length ? `${sentence(error.message)} ${sentence(fields.join('; '))}` : sentence(error.message);
}

export function fieldLabel(field) {
  return FIELD_LABELS[field] ?? field;
}

let unauthorized = () => {};

/** What a 401 means anywhere: the credential is no longer good for anything. */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** Hands a 401 to the sign-out; anything else to `show`, with the message to display. */
export function handleFailure(error, show) {
  if (error.status === 401) unauthorized(error);
  else show(explain(error));
}
