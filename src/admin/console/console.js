// Admin console for the Tax Document Gateway. Plain browser JavaScript, no build step.
// Every value from the API is rendered as text (textContent / Text nodes), never as HTML; the page's
// Trusted Types policy makes any `innerHTML = string` throw, so a slip here fails loudly.

// sessionStorage: scoped to this tab and gone when it closes. Never a cookie or a URL, so the token is
// not sent anywhere by the browser on its own and does not end up in history or logs.
const TOKEN_STORAGE_KEY = 'tdg.adminToken';
const AUDIT_LIMIT = 50;
const WEBHOOK_EVENTS_LIMIT = 50;
const DELIVERIES_LIMIT = 50;
const FIELD_LABELS = { source: 'Source', name: 'Name', expiresAt: 'Expires', gracePeriodSeconds: 'Grace period' };

const $ = (id) => document.getElementById(id);

let token = sessionStorage.getItem(TOKEN_STORAGE_KEY);
let keys = [];
/** The key the open dialog acts on. */
let dialogKey = null;

class ApiError extends Error {
  constructor(status, detail, errors = [], retryAfter = null) {
    super(detail);
    this.status = status;
    this.errors = errors;
    this.retryAfter = retryAfter;
  }
}

// ---------------------------------------------------------------------------------------------------
// DOM helpers
// ---------------------------------------------------------------------------------------------------

/** createElement with attributes; string children become Text nodes, so nothing is parsed as markup. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function pad(n) {
  return String(n).padStart(2, '0');
}

/** Times in UTC, like the API and the logs, so what an admin sees matches what operators grep for. */
function formatTime(iso) {
  const d = new Date(iso);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

function timeEl(iso) {
  return el('time', { datetime: iso, title: iso }, formatTime(iso));
}

function muted(text) {
  return el('span', { class: 'muted' }, text);
}

function keyLabel(key) {
  return `${key.prefix}…${key.last4}`;
}

function setBusy(button, busy) {
  button.disabled = busy;
  button.setAttribute('aria-busy', String(busy));
}

function hide(node) {
  node.hidden = true;
  node.replaceChildren();
}

// ---------------------------------------------------------------------------------------------------
// API
// ---------------------------------------------------------------------------------------------------

async function api(method, path, body) {
  const init = {
    method,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    cache: 'no-store',
    credentials: 'omit',
  };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'The gateway could not be reached. Check the connection and try again.');
  }
  const payload = await response.json().catch(() => null);
  if (response.ok) return payload;
  const detail = typeof payload?.detail === 'string' ? payload.detail : `The request failed (HTTP ${response.status}).`;
  const errors = Array.isArray(payload?.errors) ? payload.errors : [];
  throw new ApiError(response.status, detail, errors, response.headers.get('Retry-After'));
}

function rateLimitMessage(error) {
  const wait = error.retryAfter ? `in ${error.retryAfter} seconds` : 'in a minute';
  return `Too many failed admin sign-ins from this address: the gateway refuses admin requests for now. Try again ${wait}.`;
}

/**
 * Shows a failed call next to what caused it. A 401 means the token is no longer good for anything,
 * so it ends the session instead.
 */
function showFailure(error, box, form) {
  if (error.status === 401) {
    signOut('The gateway did not accept the admin token (401), so you were signed out. Sign in again to continue.');
    return;
  }
  const message = error.status === 429 ? rateLimitMessage(error) : error.message;
  const items = (error.errors ?? []).map((e) =>
    el('li', { 'data-field': e.field }, `${FIELD_LABELS[e.field] ?? e.field}: ${e.message}`),
  );
  box.replaceChildren(el('p', {}, message), items.length ? el('ul', {}, items) : null);
  box.hidden = false;
  if (form) markInvalid(form, error.errors ?? []);
}

function markInvalid(form, errors) {
  const invalid = new Set(errors.map((e) => e.field));
  for (const input of form.querySelectorAll('input, select')) {
    if (invalid.has(input.name)) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

/** Editing a field the gateway refused takes back that field's error, and the box once none is left. */
function clearFixedField(form, box) {
  form.addEventListener('input', (event) => {
    const input = event.target;
    if (input.getAttribute('aria-invalid') !== 'true') return;
    input.removeAttribute('aria-invalid');
    box.querySelector(`li[data-field="${CSS.escape(input.name)}"]`)?.remove();
    if (!form.querySelector('[aria-invalid="true"]')) hide(box);
  });
}

function notify(message, kind = 'success') {
  const notice = $('notice');
  notice.className = `alert alert-${kind}`;
  notice.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  notice.replaceChildren(el('p', {}, message));
  notice.hidden = false;
}

// ---------------------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------------------

function showConsole() {
  $('sign-in-view').hidden = true;
  $('console-view').hidden = false;
  $('sign-out').hidden = false;
}

function signOut(message) {
  token = null;
  sessionStorage.removeItem(TOKEN_STORAGE_KEY);
  keys = [];
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close();
  clearSecret();
  renderKeys();
  $('audit-body').replaceChildren();
  $('webhooks-body').replaceChildren();
  $('push-endpoints-body').replaceChildren();
  $('push-deliveries-body').replaceChildren();
  hide($('notice'));
  hide($('issue-error'));
  $('issue-form').reset();
  $('console-view').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in-view').hidden = false;
  const box = $('sign-in-message');
  if (message) {
    box.replaceChildren(el('p', {}, message));
    box.hidden = false;
  } else {
    hide(box);
  }
  $('token').focus();
}

function webhookEventsPath() {
  const outcome = $('filter-outcome').value;
  return `/admin/webhook-events?limit=${WEBHOOK_EVENTS_LIMIT}${outcome ? `&status=${encodeURIComponent(outcome)}` : ''}`;
}

async function loadAll() {
  const [list, audit, webhookEvents, endpoints, deliveries] = await Promise.all([
    api('GET', '/admin/api-keys'),
    api('GET', `/admin/audit-log?limit=${AUDIT_LIMIT}`),
    api('GET', webhookEventsPath()),
    api('GET', '/admin/webhook-endpoints'),
    api('GET', deliveriesPath()),
  ]);
  keys = list.data;
  renderKeys();
  renderAudit(audit.data);
  renderWebhookEvents(webhookEvents.data);
  renderEndpoints(endpoints.data);
  renderDeliveries(deliveries.data);
}

/** One request decides whether the token is good, so a wrong one counts once against the lockout. */
async function loadWithToken() {
  await api('GET', '/admin/audit-log?limit=1');
  await loadAll();
}

/** Reloads after a change; a failure here must not hide that the change itself went through. */
async function reload(load = loadAll) {
  try {
    await load();
  } catch (error) {
    if (error.status === 401) showFailure(error);
    else notify(`The lists could not be refreshed: ${error.status === 429 ? rateLimitMessage(error) : error.message}`, 'error');
  }
}

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('token');
  const box = $('sign-in-message');
  const value = input.value.trim();
  if (!value) {
    box.replaceChildren(el('p', {}, 'Enter the admin token.'));
    box.hidden = false;
    input.focus();
    return;
  }
  const button = event.submitter ?? event.target.querySelector('button[type="submit"]');
  setBusy(button, true);
  token = value;
  try {
    await loadWithToken();
    sessionStorage.setItem(TOKEN_STORAGE_KEY, value);
    input.value = '';
    hide(box);
    showConsole();
    $('issue-source').focus();
  } catch (error) {
    token = null;
    const message =
      error.status === 401
        ? 'This admin token was not accepted. Check the value of ADMIN_TOKEN and try again.'
        : error.status === 429
          ? rateLimitMessage(error)
          : error.message;
    box.replaceChildren(el('p', {}, message));
    box.hidden = false;
    input.select();
  } finally {
    setBusy(button, false);
  }
});

$('sign-out').addEventListener('click', () => signOut());

// ---------------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------------

const STATUS_CLASS = { ACTIVE: 'badge-active', REVOKED: 'badge-revoked', EXPIRED: 'badge-expired' };

function statusCell(key) {
  const badge = el('span', { class: `badge ${STATUS_CLASS[key.status] ?? ''}`, 'data-testid': 'key-status' }, key.status);
  // An active key with a revocation time is a rotated key in its grace period.
  const note = key.status === 'ACTIVE' && key.revokedAt ? el('span', { class: 'note' }, 'stops ', timeEl(key.revokedAt)) : null;
  return el('td', {}, badge, note);
}

function actionButton(action, text, key, extraClass = '') {
  return el(
    'button',
    {
      type: 'button',
      class: `button button-small ${extraClass}`,
      'data-action': action,
      'data-testid': `${action}-key`,
      'aria-label': `${text} key ${keyLabel(key)} of ${key.source}`,
    },
    text,
  );
}

function keyRow(key) {
  // A rotated key (active until its grace period ends) already has its successor: it can only be revoked.
  const rotatable = key.status === 'ACTIVE' && !key.revokedAt;
  const actions = [
    rotatable ? actionButton('rotate', 'Rotate', key) : null,
    key.status === 'ACTIVE' ? actionButton('revoke', 'Revoke', key, 'button-danger-outline') : null,
  ];
  return el(
    'tr',
    { 'data-testid': 'key-row', 'data-key-id': key.id },
    statusCell(key),
    el('td', {}, el('code', { class: 'key-label', 'data-testid': 'key-label' }, keyLabel(key))),
    el('td', {}, key.name ?? muted('—')),
    el('td', {}, timeEl(key.createdAt)),
    el('td', {}, key.expiresAt ? timeEl(key.expiresAt) : muted('Never')),
    el('td', {}, key.lastUsedAt ? timeEl(key.lastUsedAt) : muted('Not yet')),
    el('td', { class: 'actions' }, el('div', { class: 'action-group' }, actions)),
  );
}

function renderSourceOptions(sources) {
  const select = $('filter-source');
  const selected = sources.includes(select.value) ? select.value : '';
  select.replaceChildren(el('option', { value: '' }, 'All sources'), ...sources.map((s) => el('option', { value: s }, s)));
  select.value = selected;
  $('known-sources').replaceChildren(...sources.map((s) => el('option', { value: s })));
}

function renderKeys() {
  const sources = [...new Set(keys.map((k) => k.source))].sort();
  renderSourceOptions(sources);
  const filter = $('filter-source').value;
  const activeOnly = $('hide-inactive').checked;
  const visible = keys.filter((k) => (!filter || k.source === filter) && (!activeOnly || k.status === 'ACTIVE'));

  const table = $('keys-table');
  for (const body of table.querySelectorAll('tbody')) body.remove();
  for (const source of sources) {
    const group = visible.filter((k) => k.source === source);
    if (group.length === 0) continue;
    const active = group.filter((k) => k.status === 'ACTIVE').length;
    const heading = el(
      'tr',
      { class: 'group-row' },
      el(
        'th',
        { colspan: 7, scope: 'rowgroup' },
        el('span', { class: 'group-name' }, source),
        el('span', { class: 'group-count' }, `${group.length} ${group.length === 1 ? 'key' : 'keys'} · ${active} active`),
      ),
    );
    table.append(el('tbody', { 'data-testid': 'key-group', 'data-source': source }, heading, group.map(keyRow)));
  }

  const empty = $('keys-empty');
  empty.textContent = keys.length === 0 ? 'No keys yet. Issue the first one above.' : 'No keys match the filter.';
  empty.hidden = visible.length > 0;
  table.hidden = visible.length === 0;
}

$('filter-source').addEventListener('change', renderKeys);
$('hide-inactive').addEventListener('change', renderKeys);

$('refresh').addEventListener('click', async (event) => {
  // currentTarget is only set while the event is being dispatched, not after the await below.
  const button = event.currentTarget;
  setBusy(button, true);
  try {
    await loadAll();
    hide($('notice'));
  } catch (error) {
    showFailure(error, $('notice'));
  } finally {
    setBusy(button, false);
  }
});

$('keys-table').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const key = keys.find((k) => k.id === button.closest('tr').dataset.keyId);
  if (!key) return;
  if (button.dataset.action === 'revoke') openDialog('revoke', key);
  if (button.dataset.action === 'rotate') openDialog('rotate', key);
});

// ---------------------------------------------------------------------------------------------------
// Issue, and the one-time secret panel
// ---------------------------------------------------------------------------------------------------

function issueBody(form) {
  const body = { source: form.elements.source.value.trim() };
  const name = form.elements.name.value.trim();
  if (name) body.name = name;
  const expires = form.elements.expiresAt.value;
  if (expires) {
    // datetime-local is the admin's local time; the API takes an absolute instant.
    const instant = new Date(expires);
    body.expiresAt = Number.isNaN(instant.getTime()) ? expires : instant.toISOString();
  }
  return body;
}

clearFixedField($('issue-form'), $('issue-error'));

$('issue-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.target;
  const button = form.querySelector('button[type="submit"]');
  hide($('issue-error'));
  setBusy(button, true);
  try {
    const issued = await api('POST', '/admin/api-keys', issueBody(form));
    form.reset();
    markInvalid(form, []);
    showSecret(issued, `New key for ${issued.source}: copy it now`);
    await reload();
  } catch (error) {
    showFailure(error, $('issue-error'), form);
  } finally {
    setBusy(button, false);
  }
});

/** The plaintext key lives only in this panel's text until it is dismissed; it is never stored. */
function showSecret(issued, title) {
  hide($('notice'));
  $('secret-title').textContent = title;
  $('secret-source').textContent = issued.source;
  $('secret-name').replaceChildren(issued.name ?? muted('—'));
  $('secret-id').textContent = issued.id;
  $('secret-expires').replaceChildren(issued.expiresAt ? timeEl(issued.expiresAt) : 'Never');
  $('secret-key').textContent = issued.key;
  $('copy-status').textContent = '';
  $('secret-panel').hidden = false;
  // The rest of the page waits until the admin confirms the key is stored, so it cannot scroll away unseen.
  $('workspace').inert = true;
  $('secret-panel').focus();
}

function clearSecret() {
  $('secret-key').textContent = '';
  $('secret-id').textContent = '';
  $('copy-status').textContent = '';
  $('secret-panel').hidden = true;
  $('workspace').inert = false;
}

function selectKeyText() {
  const selection = window.getSelection();
  selection.removeAllRanges();
  const range = document.createRange();
  range.selectNodeContents($('secret-key'));
  selection.addRange(range);
}

$('copy-key').addEventListener('click', async () => {
  const status = $('copy-status');
  try {
    await navigator.clipboard.writeText($('secret-key').textContent);
    status.textContent = 'Copied to the clipboard.';
  } catch {
    // No clipboard API (plain HTTP on a remote host) or permission refused: let the admin copy by hand.
    selectKeyText();
    status.textContent = 'Could not copy automatically. The key is selected: press Ctrl+C (⌘C on a Mac).';
  }
});

$('dismiss-secret').addEventListener('click', () => {
  clearSecret();
  $('issue-source').focus();
});

// ---------------------------------------------------------------------------------------------------
// Rotate and revoke, each behind a confirmation dialog
// ---------------------------------------------------------------------------------------------------

function openDialog(kind, key) {
  dialogKey = key;
  $(`${kind}-key-label`).textContent = keyLabel(key);
  $(`${kind}-source`).textContent = key.source;
  hide($(`${kind}-error`));
  if (kind === 'rotate') {
    $('rotate-grace').value = '0';
    $('rotate-grace').removeAttribute('aria-invalid');
  }
  $(`${kind}-dialog`).showModal();
}

for (const dialog of document.querySelectorAll('dialog')) {
  dialog.addEventListener('click', (event) => {
    if (event.target.closest('[data-close]')) dialog.close();
  });
  dialog.addEventListener('close', () => {
    dialogKey = null;
  });
}

/** The server decides what is valid; a non-number goes as typed so it is refused rather than read as 0. */
function graceSeconds() {
  const raw = $('rotate-grace').value.trim();
  return /^\d+$/.test(raw) ? Number(raw) : raw;
}

$('revoke-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = dialogKey;
  const button = event.target.querySelector('button[type="submit"]');
  setBusy(button, true);
  try {
    await api('POST', `/admin/api-keys/${encodeURIComponent(key.id)}/revoke`);
    $('revoke-dialog').close();
    notify(`Key ${keyLabel(key)} of ${key.source} was revoked.`);
    await reload();
  } catch (error) {
    showFailure(error, $('revoke-error'));
  } finally {
    setBusy(button, false);
  }
});

clearFixedField($('rotate-form'), $('rotate-error'));

$('rotate-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = dialogKey;
  const button = event.target.querySelector('button[type="submit"]');
  setBusy(button, true);
  try {
    const issued = await api('POST', `/admin/api-keys/${encodeURIComponent(key.id)}/rotate`, { gracePeriodSeconds: graceSeconds() });
    $('rotate-dialog').close();
    showSecret(issued, `Key ${keyLabel(key)} was rotated: copy its successor now`);
    await reload();
  } catch (error) {
    showFailure(error, $('rotate-error'), event.target);
  } finally {
    setBusy(button, false);
  }
});

// ---------------------------------------------------------------------------------------------------
// Audit log
// ---------------------------------------------------------------------------------------------------

/** The key's prefix (as in the keys table, when the key is listed) beside its id. */
function auditKey(keyId) {
  const key = keys.find((k) => k.id === keyId);
  return [key ? el('code', { class: 'key-label', 'data-testid': 'audit-key-label' }, keyLabel(key)) : null, ' ', el('code', { class: 'key-id' }, keyId)];
}

function renderAudit(entries) {
  $('audit-body').replaceChildren(
    ...entries.map((entry) =>
      el(
        'tr',
        { 'data-testid': 'audit-row', 'data-action': entry.action, 'data-key-id': entry.keyId ?? '' },
        el('td', {}, timeEl(entry.createdAt)),
        el('td', {}, el('span', { class: 'action' }, entry.action)),
        el('td', {}, entry.keyId ? auditKey(entry.keyId) : muted('—')),
        el('td', {}, entry.source ?? muted('—')),
        el('td', {}, entry.remoteAddress),
      ),
    ),
  );
  $('audit-empty').hidden = entries.length > 0;
}

// ---------------------------------------------------------------------------------------------------
// Bank webhook events
// ---------------------------------------------------------------------------------------------------

const OUTCOME_CLASS = { applied: 'badge-active', unmatched: 'badge-expired', ignored: 'badge-muted', duplicate: 'badge-muted' };

function renderWebhookEvents(events) {
  $('webhooks-body').replaceChildren(
    ...events.map((event) =>
      el(
        'tr',
        { 'data-testid': 'webhook-row', 'data-outcome': event.outcome, 'data-event-id': event.eventId },
        el('td', {}, timeEl(event.receivedAt)),
        el('td', {}, el('span', { class: `badge ${OUTCOME_CLASS[event.outcome] ?? ''}` }, event.outcome)),
        el('td', {}, el('code', { class: 'key-id' }, event.eventId)),
        el('td', {}, event.eventType),
        el('td', {}, event.status),
        el('td', {}, el('code', {}, event.providerReference)),
        el('td', {}, event.documentId ? el('code', { class: 'key-id' }, event.documentId) : muted('—')),
      ),
    ),
  );
  $('webhooks-empty').hidden = events.length > 0;
}

$('filter-outcome').addEventListener('change', async () => {
  try {
    renderWebhookEvents((await api('GET', webhookEventsPath())).data);
  } catch (error) {
    if (error.status === 401) showFailure(error);
    else notify(`The webhook events could not be loaded: ${error.status === 429 ? rateLimitMessage(error) : error.message}`, 'error');
  }
});

// ---------------------------------------------------------------------------------------------------
// Push notifications
// ---------------------------------------------------------------------------------------------------

const DELIVERY_CLASS = { succeeded: 'badge-active', pending: 'badge-expired', failed: 'badge-revoked' };

function deliveriesPath() {
  const status = $('filter-delivery-status').value;
  return `/admin/outbound-deliveries?limit=${DELIVERIES_LIMIT}${status ? `&status=${encodeURIComponent(status)}` : ''}`;
}

function renderEndpoints(endpoints) {
  $('push-endpoints-body').replaceChildren(
    ...endpoints.map((endpoint) =>
      el(
        'tr',
        { 'data-testid': 'push-endpoint-row', 'data-endpoint-id': endpoint.id },
        el('td', {}, endpoint.source),
        el('td', {}, el('code', { class: 'key-id' }, endpoint.url)),
        el('td', {}, endpoint.eventTypes.join(', ')),
        el(
          'td',
          {},
          endpoint.enabled
            ? el('span', { class: 'badge badge-active' }, 'enabled')
            : el('span', { class: 'badge badge-revoked', 'data-testid': 'push-endpoint-disabled' }, `disabled: ${endpoint.disabledReason ?? 'unknown'}`),
        ),
        el('td', {}, timeEl(endpoint.createdAt)),
      ),
    ),
  );
  $('push-endpoints-empty').hidden = endpoints.length > 0;
}

function lastResult(delivery) {
  if (delivery.lastResponseStatus !== null) return `HTTP ${delivery.lastResponseStatus}`;
  return delivery.lastError ?? '—';
}

function renderDeliveries(deliveries) {
  $('push-deliveries-body').replaceChildren(
    ...deliveries.map((delivery) =>
      el(
        'tr',
        { 'data-testid': 'push-delivery-row', 'data-delivery-id': delivery.id, 'data-status': delivery.status },
        el('td', {}, delivery.lastAttemptAt ? timeEl(delivery.lastAttemptAt) : muted('not yet')),
        el('td', {}, el('span', { class: `badge ${DELIVERY_CLASS[delivery.status] ?? ''}` }, delivery.status)),
        el('td', {}, delivery.source),
        el('td', {}, el('code', { class: 'key-id', title: delivery.eventType }, delivery.eventId)),
        el('td', {}, el('code', { class: 'key-id' }, delivery.endpointUrl)),
        el('td', {}, String(delivery.attempts)),
        el('td', {}, lastResult(delivery)),
        el(
          'td',
          { class: 'actions' },
          delivery.status === 'succeeded'
            ? null
            : el('button', { type: 'button', class: 'button button-small', 'data-retry': delivery.id, 'data-testid': 'push-retry' }, 'Retry'),
        ),
      ),
    ),
  );
  $('push-deliveries-empty').hidden = deliveries.length > 0;
}

async function refreshDeliveries() {
  try {
    renderDeliveries((await api('GET', deliveriesPath())).data);
  } catch (error) {
    if (error.status === 401) showFailure(error);
    else notify(`The deliveries could not be loaded: ${error.status === 429 ? rateLimitMessage(error) : error.message}`, 'error');
  }
}

$('filter-delivery-status').addEventListener('change', refreshDeliveries);

$('push-deliveries-body').addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-retry]');
  if (!button) return;
  button.disabled = true;
  try {
    const delivery = await api('POST', `/admin/outbound-deliveries/${encodeURIComponent(button.dataset.retry)}/retry`);
    notify(`Delivery ${delivery.id} of event ${delivery.eventId} will be attempted again now.`);
    await refreshDeliveries();
  } catch (error) {
    button.disabled = false;
    if (error.status === 401) showFailure(error);
    else notify(`The delivery could not be retried: ${error.status === 429 ? rateLimitMessage(error) : error.message}`, 'error');
  }
});

// ---------------------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------------------

if (token) {
  showConsole();
  reload(loadWithToken);
} else {
  $('token').focus();
}
