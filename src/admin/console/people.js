// People: the audit log (who did what), administrators' accounts (admins only) and personal tokens
// (anyone's own; an admin's for anyone).
import { api, handleFailure, session, withQuery } from './api.js';
import {
  $,
  badge,
  clearFixedField,
  confirmAction,
  el,
  focusAfterSecret,
  formatTime,
  hide,
  instantOf,
  markInvalid,
  muted,
  noteBelow,
  PagedList,
  setBusy,
  shortId,
  showAlert,
  showFormErrors,
  showSecret,
  smallButton,
  timeEl,
} from './dom.js';
import { keyLabel, keys } from './keys.js';

const AUDIT_ACTIONS = [
  'api_key.created',
  'api_key.revoked',
  'api_key.rotated',
  'webhook_event.applied',
  'webhook_endpoint.enabled',
  'webhook_endpoint.disabled',
  'outbound_delivery.retried',
  'admin.created',
  'admin.updated',
  'admin_token.created',
  'admin_token.revoked',
  'admin.signed_in',
  'admin.sign_in_refused',
  'admin.signed_out',
];
const ROLES = ['viewer', 'operator', 'admin'];
const now = () => formatTime(new Date().toISOString());

/** Administrators by id, from the last look at the list: the audit log names targets with them. */
const knownAdmins = new Map();

function remember(admins) {
  for (const admin of admins) knownAdmins.set(admin.id, admin);
}

// ---------------------------------------------------------------------------------------------------
// Audit log
// ---------------------------------------------------------------------------------------------------

/** Who did it, in words: the account's email, or the shared credentials that have none. */
export function actorName(actor) {
  if (actor.email) return actor.email;
  if (actor.type === 'bootstrap') return 'ADMIN_TOKEN (break-glass)';
  if (actor.type === 'cli') return 'CLI';
  return 'unknown';
}

const ACTOR_VIA = { token: 'personal token', session: 'single sign-on', bootstrap: 'shared token', cli: 'operator CLI' };

function auditTarget(entry) {
  if (entry.targetType === 'api_key' || (!entry.targetType && entry.keyId)) {
    const id = entry.targetId ?? entry.keyId;
    const key = keys.items.find((k) => k.id === id);
    return ['API key ', key ? el('code', { class: 'key-label', 'data-testid': 'audit-key-label' }, keyLabel(key)) : null, ' ', shortId(id)];
  }
  if (!entry.targetType) return muted('—');
  if (entry.targetType === 'admin') {
    const admin = knownAdmins.get(entry.targetId);
    return ['administrator ', admin ? el('span', {}, admin.email) : shortId(entry.targetId)];
  }
  const words = { admin_token: 'token', webhook_endpoint: 'endpoint', outbound_delivery: 'delivery', webhook_event: 'bank event' };
  return [`${words[entry.targetType] ?? entry.targetType} `, shortId(entry.targetId ?? '')];
}

/** What an entry changed, as `role: viewer → operator`; nothing for entries whose action says it all. */
function auditChanges(changes) {
  if (!changes) return [];
  const shown = (value) => (value === null ? '—' : String(value));
  const text = Object.entries(changes).map(([field, { from, to }]) => `${field}: ${shown(from)} → ${shown(to)}`);
  return [el('span', { class: 'sub', 'data-testid': 'audit-changes' }, text.join('; '))];
}

function auditRow(entry) {
  return el(
    'tr',
    { 'data-testid': 'audit-row', 'data-id': entry.id, 'data-action': entry.action, 'data-key-id': entry.keyId ?? '' },
    el('td', {}, timeEl(entry.createdAt)),
    el(
      'td',
      {},
      el('span', { 'data-testid': 'audit-actor' }, actorName(entry.actor)),
      el('span', { class: 'sub' }, ACTOR_VIA[entry.actor.type] ?? entry.actor.type),
    ),
    el('td', {}, el('span', { class: 'action' }, entry.action), ...auditChanges(entry.changes)),
    el('td', {}, auditTarget(entry)),
    el('td', {}, entry.source ?? muted('—')),
    el('td', {}, entry.remoteAddress),
  );
}

const audit = new PagedList({
  name: 'audit',
  path: () => withQuery('/admin/audit-log', { action: $('filter-action').value, adminId: $('filter-admin').value }),
  row: auditRow,
  empty: () => ($('filter-action').value || $('filter-admin').value ? 'No entries match the filter.' : 'No changes recorded yet.'),
});

$('filter-action').append(...AUDIT_ACTIONS.map((action) => el('option', { value: action }, action)));
$('filter-action').addEventListener('change', () => audit.reload());
$('filter-admin').addEventListener('change', () => audit.reload());

/** The administrator filter's choices (every account; viewers may read them too). */
async function loadAdminChoices() {
  const page = await api('GET', withQuery('/admin/admins', { limit: 200 }));
  remember(page.data);
  const select = $('filter-admin');
  const selected = select.value;
  select.replaceChildren(el('option', { value: '' }, 'Anyone'), ...page.data.map((admin) => el('option', { value: admin.id }, admin.email)));
  select.value = page.data.some((admin) => admin.id === selected) ? selected : '';
}

export async function loadAudit() {
  try {
    await loadAdminChoices();
  } catch (error) {
    handleFailure(error, (message) => showAlert($('audit-alert'), `The administrators could not be loaded: ${message}`));
  }
  await audit.reload();
}

// ---------------------------------------------------------------------------------------------------
// Personal tokens: a panel per administrator (mine, or any in the Administrators section)
// ---------------------------------------------------------------------------------------------------

function tokenState(token) {
  if (token.revokedAt) return badge('revoked', 'revoked', 'token-state');
  if (token.expiresAt && new Date(token.expiresAt) <= new Date()) return badge('expired', 'expired', 'token-state');
  return badge('active', 'active', 'token-state');
}

function tokenRow(token) {
  const live = !token.revokedAt;
  return el(
    'tr',
    { 'data-testid': 'token-row', 'data-id': token.id },
    el('td', {}, el('code', { class: 'key-label' }, `${token.prefix}…${token.last4}`)),
    el('td', {}, token.name ?? muted('—')),
    el('td', {}, tokenState(token)),
    el('td', {}, timeEl(token.createdAt)),
    el('td', {}, token.expiresAt ? timeEl(token.expiresAt) : muted('Never')),
    el('td', {}, token.lastUsedAt ? timeEl(token.lastUsedAt) : muted('Not yet')),
    el(
      'td',
      { class: 'actions' },
      live
        ? smallButton('Revoke', {
            class: 'button-danger-outline',
            'data-revoke-token': token.id,
            'data-testid': 'token-revoke',
            'aria-label': `Revoke token ${token.prefix}…${token.last4}`,
          })
        : null,
    ),
  );
}

let panelCount = 0;

/**
 * The token form's expiry. A console session (or an expiring token) may issue only tokens that expire, by
 * `tokensExpireBy` at the latest (ADMIN_TOKEN_MAX_TTL from now in a session): the form says so before the gateway has to.
 */
function expiresField(n) {
  const by = session.me?.tokensExpireBy;
  const id = `token-expires-${n}`;
  const why =
    session.me?.actor.type === 'session'
      ? ' (ADMIN_TOKEN_MAX_TTL from now: a token issued in a console session always expires).'
      : ', when the token you signed in with expires.';
  const hint = el(
    'p',
    { class: 'hint', id: `${id}-hint`, 'data-testid': 'token-expires-hint' },
    ...(by ? ['In your local time. Required: at most ', timeEl(by), why] : ['In your local time; empty: never.']),
  );
  return el(
    'div',
    { class: 'field' },
    el('label', { for: id }, 'Expires', by ? null : ' ', by ? null : el('span', { class: 'optional' }, 'optional')),
    el('input', {
      id,
      name: 'expiresAt',
      type: 'datetime-local',
      'aria-describedby': `${id}-hint`,
      'data-testid': 'token-expires',
      ...(by ? { required: true } : {}),
    }),
    hint,
  );
}

/** The tokens of `admin` ({ id, email }), with a form to issue one; returns the panel's element. */
function tokenPanel(admin, title) {
  const n = ++panelCount;
  const error = el('div', { class: 'alert alert-error form-error', role: 'alert', hidden: true, 'data-testid': 'token-error' });
  const form = el(
    'form',
    { class: 'issue-form token-form', novalidate: true, 'data-testid': 'token-form' },
    el(
      'div',
      { class: 'field' },
      el('label', { for: `token-name-${n}` }, 'Name ', el('span', { class: 'optional' }, 'optional')),
      el('input', { id: `token-name-${n}`, name: 'name', maxlength: 200, autocomplete: 'off', 'data-testid': 'token-name' }),
      el('p', { class: 'hint' }, 'Where it is used, e.g. “laptop”.'),
    ),
    expiresField(n),
    el('div', { class: 'form-actions' }, el('button', { type: 'submit', class: 'button button-primary', 'data-testid': 'token-issue' }, 'Issue token')),
    error,
  );
  const body = el('tbody');
  const empty = el('p', { class: 'empty', hidden: true }, 'No tokens yet.');
  const table = el(
    'table',
    { class: 'table', 'data-testid': 'tokens-table' },
    el('caption', { class: 'visually-hidden' }, `Personal tokens of ${admin.email}, newest first`),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ['Token', 'Name', 'State', 'Created', 'Expires', 'Last used'].map((h) => el('th', { scope: 'col' }, h)),
        el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Actions')),
      ),
    ),
    body,
  );
  const panel = el(
    'div',
    { class: 'token-panel', 'data-testid': 'token-panel', 'data-admin-id': admin.id },
    title ? el('h3', {}, title) : null,
    form,
    el('div', { class: 'table-wrap' }, table),
    empty,
  );
  let tokens = [];

  const load = async () => {
    try {
      tokens = (await api('GET', `/admin/admins/${encodeURIComponent(admin.id)}/tokens`)).data;
      hide(error);
      body.replaceChildren(...tokens.map(tokenRow));
      empty.hidden = tokens.length > 0;
    } catch (failure) {
      handleFailure(failure, (message) => showAlert(error, `The tokens could not be loaded: ${message}`));
    }
  };

  clearFixedField(form, error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    hide(error);
    setBusy(button, true);
    const request = {};
    const name = form.elements.name.value.trim();
    if (name) request.name = name;
    const expiresAt = instantOf(form.elements.expiresAt.value);
    if (expiresAt) request.expiresAt = expiresAt;
    try {
      const issued = await api('POST', `/admin/admins/${encodeURIComponent(admin.id)}/tokens`, request);
      form.reset();
      markInvalid(form, []);
      focusAfterSecret(form.elements.name);
      showSecret({
        title: `New token for ${admin.email}: copy it now`,
        what: 'token',
        value: issued.token,
        meta: [
          ['For', admin.email, 'secret-for'],
          ['Name', issued.name ?? '—'],
          ['Token id', el('code', {}, issued.id), 'secret-id'],
          ['Expires', issued.expiresAt ? timeEl(issued.expiresAt) : 'Never'],
        ],
      });
      await load();
      const row = body.querySelector(`tr[data-id="${CSS.escape(issued.id)}"]`);
      if (row) noteBelow(row, `Issued at ${now()}.`);
    } catch (failure) {
      handleFailure(failure, () => showFormErrors(error, form, failure));
    } finally {
      setBusy(button, false);
    }
  });

  body.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-revoke-token]');
    if (!button) return;
    const token = tokens.find((t) => t.id === button.dataset.revokeToken);
    if (!token) return;
    confirmAction({
      title: 'Revoke this token?',
      text: `${token.prefix}…${token.last4} of ${admin.email} stops working at once: the very next request with it gets 401. This cannot be undone.`,
      confirm: 'Revoke token',
      action: () => api('POST', `/admin/admin-tokens/${encodeURIComponent(token.id)}/revoke`),
      done: (revoked) => {
        tokens = tokens.map((t) => (t.id === revoked.id ? revoked : t));
        const row = body.querySelector(`tr[data-id="${CSS.escape(revoked.id)}"]`);
        const fresh = tokenRow(revoked);
        row?.replaceWith(fresh);
        noteBelow(fresh, `Revoked at ${now()}: the next request with it gets 401.`);
      },
    });
  });

  load();
  return panel;
}

export function loadMyTokens() {
  const me = session.me;
  const container = $('my-tokens');
  if (!me?.actor.adminId) {
    container.replaceChildren(
      el(
        'p',
        { class: 'empty' },
        'The break-glass ADMIN_TOKEN belongs to no account, so it has no personal tokens. An admin creates accounts under Administrators.',
      ),
    );
    return;
  }
  container.replaceChildren(el('div', { class: 'card' }, tokenPanel({ id: me.actor.adminId, email: me.actor.email })));
}

// ---------------------------------------------------------------------------------------------------
// Administrators (admins only)
// ---------------------------------------------------------------------------------------------------

function adminRow(admin) {
  const self = admin.id === session.me?.actor.adminId;
  const roleId = `role-of-${admin.id}`;
  const roleSelect = el(
    'select',
    { id: roleId, 'data-role-select': admin.id, 'data-testid': 'admin-role-select' },
    ROLES.map((role) => el('option', { value: role, selected: role === admin.role }, role)),
  );
  const saveRole = smallButton('Change role', { 'data-save-role': admin.id, 'data-testid': 'admin-save-role', disabled: true });
  roleSelect.addEventListener('change', () => {
    saveRole.disabled = roleSelect.value === admin.role;
  });
  const toggle = self
    ? null
    : admin.disabledAt
      ? smallButton('Enable', { 'data-disable': 'false', 'data-testid': 'admin-enable', 'aria-label': `Enable ${admin.email}` })
      : smallButton('Disable', {
          class: 'button-danger-outline',
          'data-disable': 'true',
          'data-testid': 'admin-disable',
          'aria-label': `Disable ${admin.email}`,
        });
  return el(
    'tr',
    { 'data-testid': 'admin-row', 'data-id': admin.id, 'data-email': admin.email, 'data-role': admin.role, 'data-disabled': String(Boolean(admin.disabledAt)) },
    el('td', {}, admin.email, self ? el('span', { class: 'sub' }, 'you') : null),
    el('td', {}, admin.name ?? muted('—')),
    el(
      'td',
      {},
      el('div', { class: 'inline-control' }, el('label', { for: roleId, class: 'visually-hidden' }, `Role of ${admin.email}`), roleSelect, saveRole),
    ),
    el(
      'td',
      {},
      admin.disabledAt
        ? [badge('disabled', 'revoked', 'admin-state'), el('span', { class: 'sub' }, 'since ', timeEl(admin.disabledAt))]
        : badge('active', 'active', 'admin-state'),
    ),
    el('td', {}, admin.lastSeenAt ? timeEl(admin.lastSeenAt) : muted('Not yet')),
    el(
      'td',
      { class: 'actions' },
      el(
        'div',
        { class: 'action-group' },
        toggle,
        smallButton('Tokens', {
          'data-tokens': admin.id,
          'aria-expanded': String(Boolean(document.querySelector(`tr[data-tokens-for="${CSS.escape(admin.id)}"]`))),
          'data-testid': 'admin-tokens',
          'aria-label': `Tokens of ${admin.email}`,
        }),
      ),
    ),
  );
}

const admins = new PagedList({
  name: 'admins',
  path: () => '/admin/admins',
  row: (admin) => {
    remember([admin]);
    return adminRow(admin);
  },
  empty: 'No accounts yet: add the first administrator above.',
});

export function loadAdmins() {
  return admins.reload();
}

async function changeAdmin(row, admin, change, message, button) {
  setBusy(button, true);
  try {
    const updated = await api('PATCH', `/admin/admins/${encodeURIComponent(admin.id)}`, change);
    admins.update(updated, message(updated));
  } catch (error) {
    setBusy(button, false);
    handleFailure(error, (text) => noteBelow(row, `The account could not be changed: ${text}`, 'error'));
  }
}

admins.table.addEventListener('click', (event) => {
  const button = event.target.closest('button');
  const row = button?.closest('tr[data-testid="admin-row"]');
  if (!row) return;
  const admin = admins.items.find((a) => a.id === row.dataset.id);
  if (!admin) return;
  if (button.dataset.saveRole) {
    const role = row.querySelector('select[data-role-select]').value;
    changeAdmin(row, admin, { role }, (updated) => `Role changed to ${updated.role} at ${now()}; it applies from their next request.`, button);
  } else if (button.dataset.disable === 'true') {
    confirmAction({
      title: `Disable ${admin.email}?`,
      text: 'Their personal tokens and console sessions stop on the very next request. Enable the account again to let them back in.',
      confirm: 'Disable account',
      action: () => api('PATCH', `/admin/admins/${encodeURIComponent(admin.id)}`, { disabled: true }),
      done: (updated) => admins.update(updated, `Disabled at ${now()}: their tokens and sessions no longer work.`),
    });
  } else if (button.dataset.disable === 'false') {
    changeAdmin(row, admin, { disabled: false }, () => `Enabled at ${now()}: their tokens work again.`, button);
  } else if (button.dataset.tokens) {
    toggleTokens(row, admin, button);
  }
});

function toggleTokens(row, admin, button) {
  const next = row.nextElementSibling;
  const open = next?.classList.contains('tokens-row') ? next : next?.nextElementSibling?.classList.contains('tokens-row') ? next.nextElementSibling : null;
  if (open) {
    open.remove();
    button.setAttribute('aria-expanded', 'false');
    return;
  }
  const anchor = next?.classList.contains('note-row') ? next : row;
  anchor.after(
    el('tr', { class: 'tokens-row', 'data-tokens-for': admin.id }, el('td', { colspan: 6 }, tokenPanel(admin, `Personal tokens of ${admin.email}`))),
  );
  button.setAttribute('aria-expanded', 'true');
}

clearFixedField($('admin-form'), $('admin-error'));

$('admin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.target;
  const button = form.querySelector('button[type="submit"]');
  hide($('admin-error'));
  setBusy(button, true);
  const request = { email: form.elements.email.value.trim(), role: form.elements.role.value };
  const name = form.elements.name.value.trim();
  if (name) request.name = name;
  try {
    const created = await api('POST', '/admin/admins', request);
    form.reset();
    markInvalid(form, []);
    await admins.reload();
    const row = admins.rowOf(created.id);
    if (row) noteBelow(row, `Added at ${now()} as ${created.role}. They sign in by single sign-on with this email, or with a token issued under Tokens.`);
  } catch (error) {
    handleFailure(error, () => showFormErrors($('admin-error'), form, error));
  } finally {
    setBusy(button, false);
  }
});

/** Signed out: nothing of anyone's accounts or tokens stays on the page. */
export function resetPeople() {
  audit.clear();
  admins.clear();
  knownAdmins.clear();
  $('my-tokens').replaceChildren();
  $('filter-action').value = '';
  $('filter-admin').replaceChildren(el('option', { value: '' }, 'Anyone'));
  $('admin-form').reset();
  hide($('admin-error'));
}
