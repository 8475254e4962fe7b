// API keys: the list by source, issue, rotate and revoke (admins), each change shown beside its key.
import { api, can, handleFailure, withQuery } from './api.js';
import {
  $,
  clearFixedField,
  el,
  focusAfterSecret,
  formatTime,
  hide,
  instantOf,
  markInvalid,
  muted,
  noteBelow,
  PagedList,
  rememberSources,
  search,
  setBusy,
  showAlert,
  showFormErrors,
  showSecret,
  timeEl,
} from './dom.js';

const STATUS_CLASS = { ACTIVE: 'active', REVOKED: 'revoked', EXPIRED: 'expired' };

export const keyLabel = (key) => `${key.prefix}…${key.last4}`;

/** The key the open dialog acts on. */
let dialogKey = null;

function statusCell(key) {
  const badge = el('span', { class: `badge badge-${STATUS_CLASS[key.status] ?? 'muted'}`, 'data-testid': 'key-status' }, key.status);
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
  const actions = can('admin')
    ? [
        rotatable ? actionButton('rotate', 'Rotate', key) : null,
        key.status === 'ACTIVE' ? actionButton('revoke', 'Revoke', key, 'button-danger-outline') : null,
      ]
    : [];
  return el(
    'tr',
    { 'data-testid': 'key-row', 'data-id': key.id, 'data-key-id': key.id },
    statusCell(key),
    el('td', {}, el('code', { class: 'key-label', 'data-testid': 'key-label' }, keyLabel(key))),
    el('td', {}, key.name ?? muted('—')),
    el('td', {}, timeEl(key.createdAt)),
    el('td', {}, key.expiresAt ? timeEl(key.expiresAt) : muted('Never')),
    el('td', {}, key.lastUsedAt ? timeEl(key.lastUsedAt) : muted('Not yet')),
    el('td', { class: 'actions' }, el('div', { class: 'action-group' }, actions)),
  );
}

/** Groups the loaded keys by source; returns how many rows it shows. */
function renderKeys(items) {
  rememberSources(items.map((k) => k.source));
  const activeOnly = $('hide-inactive').checked;
  const visible = items.filter((k) => !activeOnly || k.status === 'ACTIVE');
  const sources = [...new Set(visible.map((k) => k.source))].sort();
  const table = $('keys-table');
  for (const body of table.querySelectorAll('tbody')) body.remove();
  for (const source of sources) {
    const group = visible.filter((k) => k.source === source);
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
  table.hidden = visible.length === 0;
  return visible.length;
}

export const keys = new PagedList({
  name: 'keys',
  path: () => withQuery('/admin/api-keys', { source: search.source }),
  row: keyRow,
  renderAll: renderKeys,
  empty: (items) => {
    if (items.length > 0) return 'Every key shown is revoked or expired.';
    if (search.source) return `No keys for the source ${search.source}.`;
    return can('admin') ? 'No keys yet. Issue the first one above.' : 'No keys yet.';
  },
});

$('hide-inactive').addEventListener('change', () => keys.render());

$('keys-table').addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (!button) return;
  const key = keys.items.find((k) => k.id === button.closest('tr').dataset.keyId);
  if (!key) return;
  openDialog(button.dataset.action, key);
});

function secretOf(issued, title) {
  showSecret({
    title,
    what: 'key',
    value: issued.key,
    meta: [
      ['Source', issued.source, 'secret-source'],
      ['Name', issued.name ?? '—'],
      ['Key id', el('code', {}, issued.id), 'secret-id'],
      ['Expires', issued.expiresAt ? timeEl(issued.expiresAt) : 'Never'],
    ],
  });
}

function issueBody(form) {
  const body = { source: form.elements.source.value.trim() };
  const name = form.elements.name.value.trim();
  if (name) body.name = name;
  const expiresAt = instantOf(form.elements.expiresAt.value);
  if (expiresAt) body.expiresAt = expiresAt;
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
    focusAfterSecret($('issue-source'));
    secretOf(issued, `New key for ${issued.source}: copy it now`);
    await keys.reload();
    const row = keys.rowOf(issued.id);
    if (row) noteBelow(row, `Issued at ${formatTime(new Date().toISOString())}.`);
  } catch (error) {
    handleFailure(error, () => showFormErrors($('issue-error'), form, error));
  } finally {
    setBusy(button, false);
  }
});

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
    const revoked = await api('POST', `/admin/api-keys/${encodeURIComponent(key.id)}/revoke`);
    $('revoke-dialog').close();
    keys.update(revoked, `Key ${keyLabel(key)} was revoked: the next request with it gets 401.`);
  } catch (error) {
    handleFailure(error, (message) => showAlert($('revoke-error'), message));
  } finally {
    setBusy(button, false);
  }
});

clearFixedField($('rotate-form'), $('rotate-error'));

$('rotate-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = dialogKey;
  const form = event.target;
  const button = form.querySelector('button[type="submit"]');
  setBusy(button, true);
  try {
    const grace = graceSeconds();
    const issued = await api('POST', `/admin/api-keys/${encodeURIComponent(key.id)}/rotate`, { gracePeriodSeconds: grace });
    $('rotate-dialog').close();
    focusAfterSecret(null);
    secretOf(issued, `Key ${keyLabel(key)} was rotated: copy its successor now`);
    await keys.reload();
    const row = keys.rowOf(key.id);
    const when = grace === 0 ? 'it stopped working now' : `it keeps working for ${grace} seconds`;
    if (row) noteBelow(row, `Rotated: its successor is ${keyLabel(issued)}, and ${when}.`);
  } catch (error) {
    handleFailure(error, () => showFormErrors($('rotate-error'), form, error));
  } finally {
    setBusy(button, false);
  }
});
