// DOM helpers shared by every section. Every value from the API is rendered as text (textContent / Text
// nodes), never as HTML; the page's Trusted Types policy makes any `innerHTML = string` throw, so a slip
// here fails loudly.
import { api, fieldLabel, handleFailure, rateLimitMessage, withQuery } from './api.js';

export const PAGE_SIZE = 50;

/** The source searched for across keys, endpoints and deliveries ('' for every source). */
export const search = { source: '' };
const SVG_NS = 'http://www.w3.org/2000/svg';

export const $ = (id) => document.getElementById(id);

function assign(node, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.setAttribute('class', value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
}

function appendChildren(node, children) {
  for (const child of children.flat(Infinity)) if (child !== null && child !== undefined && child !== false) node.append(child);
}

/** createElement with attributes; string children become Text nodes, so nothing is parsed as markup. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  assign(node, attributes);
  appendChildren(node, children);
  return node;
}

/** The same for SVG, in its namespace. */
export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  assign(node, attributes);
  appendChildren(node, children);
  return node;
}

export function pad(n) {
  return String(n).padStart(2, '0');
}

/** Times in UTC, like the API and the logs, so what an admin sees matches what operators grep for. */
export function formatTime(iso) {
  const d = new Date(iso);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

export function clock(date) {
  return `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}`;
}

export function timeEl(iso) {
  return el('time', { datetime: iso, title: iso }, formatTime(iso));
}

export function muted(text) {
  return el('span', { class: 'muted' }, text);
}

/** An id too long for a table cell: its first characters, the whole of it on hover and for screen readers. */
export function shortId(id, testid) {
  return el('code', { class: 'key-id', title: id, 'data-testid': testid }, id.length > 13 ? `${id.slice(0, 8)}…` : id);
}

export function badge(text, kind, testid) {
  return el('span', { class: `badge badge-${kind}`, 'data-testid': testid }, text);
}

export function setBusy(button, busy) {
  button.disabled = busy;
  button.setAttribute('aria-busy', String(busy));
}

export function hide(node) {
  node.hidden = true;
  node.replaceChildren();
}

export function showAlert(box, message) {
  box.replaceChildren(el('p', {}, message));
  box.hidden = false;
}

/** A message for the whole page, under the section links (for what belongs to no row). */
export function notify(message, kind = 'success') {
  const notice = $('notice');
  notice.className = `alert alert-${kind}`;
  notice.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  notice.replaceChildren(el('p', {}, message));
  notice.hidden = false;
}

/** Tells screen readers what just happened; the visible message sits beside what changed. */
export function announce(message) {
  const live = $('live');
  live.textContent = '';
  // A fresh text node in a fresh task, so the same message twice is announced twice.
  setTimeout(() => {
    live.textContent = message;
  }, 50);
}

export function smallButton(text, { class: extra = '', ...attributes } = {}) {
  return el('button', { type: 'button', class: `button button-small ${extra}`.trim(), ...attributes }, text);
}

/**
 * Shows an action's outcome in a row right under the row it acted on, where the eye already is,
 * and announces it. A newer outcome for the same row replaces the older one.
 */
export function noteBelow(row, message, kind = 'success') {
  const next = row.nextElementSibling;
  if (next?.classList.contains('note-row')) next.remove();
  const columns = row.closest('table')?.querySelectorAll('thead th').length ?? row.children.length;
  const note = el(
    'tr',
    { class: 'note-row', 'data-note-for': row.dataset.id ?? '' },
    el('td', { colspan: columns }, el('p', { class: `row-note row-note-${kind}`, 'data-testid': 'row-note' }, message)),
  );
  row.after(note);
  row.classList.remove('row-changed');
  // Restarts the highlight on a row changed twice in a row.
  void row.offsetWidth;
  row.classList.add('row-changed');
  announce(message);
  return note;
}

// ---------------------------------------------------------------------------------------------------
// Lists paged with the API's nextCursor
// ---------------------------------------------------------------------------------------------------

/**
 * One list on the page: its first page on `reload`, the next with the More button, rows replaced in place
 * when an action changes one. `path()` gives the list's URL with its filters; elements are found by the
 * list's name: `<name>-body`, `-empty`, `-pager`, `-count`, `-more` and `-alert`.
 */
export class PagedList {
  constructor({ name, path, row, empty, idOf = (item) => item.id, renderAll, alert, pageSize = PAGE_SIZE }) {
    this.name = name;
    this.path = path;
    this.row = row;
    this.emptyText = empty;
    this.idOf = idOf;
    this.renderAll = renderAll;
    this.pageSize = pageSize;
    this.body = $(`${name}-body`);
    this.table = this.body?.closest('table') ?? $(`${name}-table`);
    this.emptyNode = $(`${name}-empty`);
    this.pager = $(`${name}-pager`);
    this.count = $(`${name}-count`);
    this.moreButton = $(`${name}-more`);
    this.alert = alert ?? $(`${name}-alert`);
    this.items = [];
    this.nextCursor = null;
    // Each reload starts a generation; an answer from an older one (a filter changed meanwhile) is dropped.
    this.generation = 0;
    this.moreButton.addEventListener('click', () => this.more());
  }

  async reload() {
    const generation = ++this.generation;
    try {
      const page = await api('GET', withQuery(this.path(), { limit: this.pageSize }));
      if (generation !== this.generation) return;
      this.items = page.data;
      this.nextCursor = page.nextCursor;
      if (this.alert) hide(this.alert);
      this.render();
    } catch (error) {
      if (generation === this.generation) this.failed(error);
    }
  }

  async more() {
    const generation = this.generation;
    setBusy(this.moreButton, true);
    try {
      const page = await api('GET', withQuery(this.path(), { limit: this.pageSize, cursor: this.nextCursor }));
      if (generation !== this.generation) return;
      const known = new Set(this.items.map(this.idOf));
      this.items.push(...page.data.filter((item) => !known.has(this.idOf(item))));
      this.nextCursor = page.nextCursor;
      this.render();
    } catch (error) {
      this.failed(error);
    } finally {
      setBusy(this.moreButton, false);
    }
  }

  failed(error) {
    handleFailure(error, (message) => this.alert && showAlert(this.alert, `The list could not be loaded: ${message}`));
  }

  clear() {
    this.generation++;
    this.items = [];
    this.nextCursor = null;
    if (this.renderAll) this.renderAll([]);
    else this.body.replaceChildren();
    this.emptyNode.hidden = true;
    this.pager.hidden = true;
  }

  render() {
    // renderAll may show fewer rows than it has (a filter of its own) and says how many it shows.
    let shown = this.items.length;
    if (this.renderAll) shown = this.renderAll(this.items);
    else this.body.replaceChildren(...this.items.map((item) => this.row(item)));
    this.emptyNode.textContent = typeof this.emptyText === 'function' ? this.emptyText(this.items) : this.emptyText;
    this.emptyNode.hidden = shown > 0;
    this.count.textContent = `${this.items.length} shown${this.nextCursor ? ', more on the next page' : ''}`;
    this.pager.hidden = this.items.length === 0;
    this.moreButton.hidden = !this.nextCursor;
    this.onRender?.();
  }

  rowOf(id) {
    return this.table.querySelector(`tr[data-id="${CSS.escape(id)}"]`);
  }

  /** Puts `item` in place of the row with its id, and the outcome of what changed it under it. */
  update(item, message, kind = 'success') {
    const id = this.idOf(item);
    const index = this.items.findIndex((existing) => this.idOf(existing) === id);
    if (index >= 0) this.items[index] = item;
    if (this.renderAll) {
      // Grouped rows carry per-group figures: the whole table is drawn again.
      this.render();
      const row = this.rowOf(id);
      if (row && message) noteBelow(row, message, kind);
      return row;
    }
    const old = this.rowOf(id);
    if (!old) return null;
    if (old.nextElementSibling?.classList.contains('note-row')) old.nextElementSibling.remove();
    const fresh = this.row(item);
    old.replaceWith(fresh);
    if (message) noteBelow(fresh, message, kind);
    return fresh;
  }
}

const knownSources = new Set();

/** Offers the sources seen so far in the source fields (search, issue a key, documents). */
export function rememberSources(sources) {
  const before = knownSources.size;
  for (const source of sources) knownSources.add(source);
  if (knownSources.size === before) return;
  $('known-sources').replaceChildren(...[...knownSources].sort().map((source) => el('option', { value: source })));
}

export function forgetSources() {
  knownSources.clear();
  $('known-sources').replaceChildren();
}

// ---------------------------------------------------------------------------------------------------
// The one-time secret panel (a new API key or personal token) and the confirmation dialog
// ---------------------------------------------------------------------------------------------------

/** The plaintext lives only in this panel's text until it is dismissed; it is never stored. */
export function showSecret({ title, value, what, meta }) {
  $('secret-title').textContent = title;
  $('secret-warning').textContent = `This ${what} will not be shown again.`;
  $('secret-meta').replaceChildren(...meta.map(([label, content, testid]) => el('div', {}, el('dt', {}, label), el('dd', { 'data-testid': testid }, content))));
  $('secret-key').textContent = value;
  $('copy-key').textContent = `Copy ${what}`;
  $('copy-status').textContent = '';
  $('secret-panel').hidden = false;
  // The rest of the page waits until the admin confirms the secret is stored, so it cannot scroll away unseen.
  $('workspace').inert = true;
  $('secret-panel').focus();
  window.scrollTo({ top: 0 });
}

export function clearSecret() {
  $('secret-key').textContent = '';
  $('secret-meta').replaceChildren();
  $('copy-status').textContent = '';
  $('secret-panel').hidden = true;
  $('workspace').inert = false;
}

function selectSecretText() {
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
    selectSecretText();
    status.textContent = 'Could not copy automatically. The text is selected: press Ctrl+C (⌘C on a Mac).';
  }
});

let afterSecret = null;

/** What gets the focus back once the secret is stored (the form it came from). */
export function focusAfterSecret(element) {
  afterSecret = element;
}

$('dismiss-secret').addEventListener('click', () => {
  clearSecret();
  afterSecret?.focus();
});

let confirmation = null;

/**
 * Asks before an action that cannot simply be undone. `action` runs on confirmation; a failure stays in the
 * dialog, a success closes it and goes to `done`.
 */
export function confirmAction({ title, text, confirm, action, done }) {
  confirmation = { action, done };
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-submit').textContent = confirm;
  hide($('confirm-error'));
  $('confirm-dialog').showModal();
}

$('confirm-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const current = confirmation;
  if (!current) return;
  const button = $('confirm-submit');
  setBusy(button, true);
  try {
    const result = await current.action();
    $('confirm-dialog').close();
    current.done?.(result);
  } catch (error) {
    handleFailure(error, (message) => showAlert($('confirm-error'), message));
  } finally {
    setBusy(button, false);
  }
});

for (const dialog of document.querySelectorAll('dialog')) {
  dialog.addEventListener('click', (event) => {
    if (event.target.closest('[data-close]')) dialog.close();
  });
}

// ---------------------------------------------------------------------------------------------------
// Forms
// ---------------------------------------------------------------------------------------------------

/** Shows a refused form's errors next to it, each field's on its line, and marks the fields. */
export function showFormErrors(box, form, error) {
  const items = (error.errors ?? []).map((e) => el('li', { 'data-field': e.field }, `${fieldLabel(e.field)}: ${e.message}`));
  box.replaceChildren(el('p', {}, error.status === 429 ? rateLimitMessage(error) : error.message), ...(items.length ? [el('ul', {}, items)] : []));
  box.hidden = false;
  if (form) markInvalid(form, error.errors ?? []);
}

export function markInvalid(form, errors) {
  const invalid = new Set(errors.map((e) => e.field));
  for (const input of form.querySelectorAll('input, select')) {
    if (invalid.has(input.name)) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

/** Editing a field the gateway refused takes back that field's error, and the box once none is left. */
export function clearFixedField(form, box) {
  form.addEventListener('input', (event) => {
    const input = event.target;
    if (input.getAttribute('aria-invalid') !== 'true') return;
    input.removeAttribute('aria-invalid');
    box.querySelector(`li[data-field="${CSS.escape(input.name)}"]`)?.remove();
    if (!form.querySelector('[aria-invalid="true"]')) hide(box);
  });
}

/** datetime-local is the admin's local time; the API takes an absolute instant. */
export function instantOf(localValue) {
  if (!localValue) return undefined;
  const instant = new Date(localValue);
  return Number.isNaN(instant.getTime()) ? localValue : instant.toISOString();
}
