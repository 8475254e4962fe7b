// Admin console for the Tax Document Gateway: plain browser JavaScript modules, no build step.
// This one signs in and out, shows who is signed in, switches sections and searches by source; the
// sections live in keys.js, operations.js, documents.js, people.js and charts.js.
import { api, can, explain, forgetToken, keepToken, onUnauthorized, rateLimitMessage, session, storedToken } from './api.js';
import { $, announce, clearSecret, el, forgetSources, hide, notify, search, setBusy, showAlert } from './dom.js';
import { loadOverview, resetOverview } from './charts.js';
import { openDocument, refreshDocuments, resetDocuments } from './documents.js';
import { keys } from './keys.js';
import { bankEvents, deliveries, endpoints } from './operations.js';
import { loadAdmins, loadAudit, loadMyTokens, resetPeople } from './people.js';
import { loadArchive } from './archive.js';

const REFUSED_SSO =
  'Single sign-on did not sign you in: your account is not an enabled administrator of this gateway, or the sign-in was cancelled. ' +
  'Ask an administrator for access, or sign in with a token.';

/** Each section: what showing it loads, and the least role that sees it. */
const VIEWS = {
  overview: { load: loadOverview },
  deliveries: { load: () => deliveries.reload() },
  endpoints: { load: () => endpoints.reload() },
  // A search is asked for, not repeated on every visit: coming back keeps the results and the open document.
  documents: { load: () => undefined, refresh: refreshDocuments },
  'bank-events': { load: () => bankEvents.reload() },
  keys: { load: () => keys.reload() },
  audit: { load: loadAudit },
  archive: { load: loadArchive },
  admins: { load: loadAdmins, role: 'admin' },
  'my-tokens': { load: loadMyTokens },
};

let current = null;

function allowed(name) {
  const view = VIEWS[name];
  if (!view || !can(view.role ?? 'viewer')) return false;
  return name !== 'my-tokens' || Boolean(session.me?.actor.adminId);
}

function viewFromHash() {
  const name = location.hash.slice(1);
  return allowed(name) ? name : 'overview';
}

/** Shows one section and loads its data fresh. */
function show(name) {
  current = name;
  for (const view of document.querySelectorAll('.view')) view.hidden = view.dataset.view !== name;
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  hide($('notice'));
  return VIEWS[name].load();
}

window.addEventListener('hashchange', () => {
  if (session.me) show(viewFromHash());
});

// The link of the section already shown changes no hash; it reloads the section instead.
for (const link of document.querySelectorAll('[data-nav]')) {
  link.addEventListener('click', () => {
    if (session.me && link.dataset.nav === current) show(current);
  });
}

for (const button of document.querySelectorAll('[data-refresh]')) {
  button.addEventListener('click', async () => {
    const view = VIEWS[button.dataset.refresh];
    setBusy(button, true);
    try {
      await (view.refresh ?? view.load)();
    } finally {
      setBusy(button, false);
    }
  });
}

/** Overview tiles lead to the list they count, with its filter set. */
$('tile-attention').addEventListener('click', () => {
  $('filter-delivery-status').value = 'attention';
});
$('tile-ambiguous').addEventListener('click', () => {
  $('filter-outcome').value = 'ambiguous';
  $('filter-reference').value = '';
});

/** Any document link (a delivery's, a bank event's) opens the document in the Documents section. */
document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-document-id]');
  if (!link) return;
  event.preventDefault();
  if (current !== 'documents') location.hash = '#documents';
  openDocument(link.dataset.documentId);
});

// ---------------------------------------------------------------------------------------------------
// Search by source: keys, endpoints and deliveries of one source
// ---------------------------------------------------------------------------------------------------

function countText(list, one, many) {
  const n = list.items.length;
  return `${n}${list.nextCursor ? '+' : ''} ${n === 1 && !list.nextCursor ? one : many}`;
}

function renderSearchState() {
  const active = Boolean(search.source);
  $('search-summary').hidden = !active;
  for (const chip of document.querySelectorAll('[data-source-chip]')) {
    chip.hidden = !active;
    chip.replaceChildren(
      ...(active
        ? [
            'Only the source ',
            el('strong', {}, search.source),
            ' ',
            el('button', { type: 'button', class: 'link-button', 'data-clear-search': '' }, 'Show every source'),
          ]
        : []),
    );
  }
  if (!active) return;
  const filter = $('filter-delivery-status');
  $('search-summary-source').textContent = search.source;
  $('search-summary-keys').textContent = countText(keys, 'API key', 'API keys');
  $('search-summary-endpoints').textContent = countText(endpoints, 'client endpoint', 'client endpoints');
  $('search-summary-deliveries').textContent =
    `${countText(deliveries, 'push delivery', 'push deliveries')} (${filter.selectedOptions[0].textContent.toLowerCase()})`;
}

async function applySearch(source) {
  search.source = source;
  $('search-source').value = source;
  await Promise.all([keys.reload(), endpoints.reload(), deliveries.reload()]);
  renderSearchState();
  if (source && session.me)
    announce(
      `Source ${source}: ${$('search-summary-keys').textContent}, ${$('search-summary-endpoints').textContent}, ${$('search-summary-deliveries').textContent}.`,
    );
}

// The API's rule for a source, checked here too so that a typo gets one message rather than three failed lists.
const SOURCE_PATTERN = /^[a-z0-9][a-z0-9-]{1,62}$/;

$('search-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $('search-source');
  const source = input.value.trim().toLowerCase();
  if (source && !SOURCE_PATTERN.test(source)) {
    input.setAttribute('aria-invalid', 'true');
    notify(`“${source}” is not a source: a source is 2–63 characters of a–z, 0–9 and -, starting with a letter or digit.`, 'error');
    input.focus();
    return;
  }
  input.removeAttribute('aria-invalid');
  hide($('notice'));
  applySearch(source);
});

document.addEventListener('click', (event) => {
  if (event.target.closest('#search-clear, [data-clear-search]')) applySearch('');
});

// The summary's figures follow the lists when they are reloaded or paged on their own.
for (const list of [keys, endpoints, deliveries]) list.onRender = renderSearchState;

// ---------------------------------------------------------------------------------------------------
// Signing in and out
// ---------------------------------------------------------------------------------------------------

const ACTOR_LABEL = { bootstrap: 'ADMIN_TOKEN (break-glass)' };
const SIGNED_IN_WITH = { bootstrap: 'the break-glass ADMIN_TOKEN', token: 'a personal token', session: 'single sign-on' };

/** Shows the console for `me` (the answer of GET /admin/me), with what the role may not do hidden. */
function enter(me) {
  session.me = me;
  session.csrfToken = me.actor.type === 'session' ? (me.csrfToken ?? null) : null;
  $('who').textContent = me.actor.email ?? ACTOR_LABEL[me.actor.type] ?? me.actor.type;
  $('whoami').title = `Signed in with ${SIGNED_IN_WITH[me.actor.type] ?? me.actor.type}`;
  $('role').textContent = me.role;
  $('role').className = `badge role-badge role-${me.role}`;
  for (const node of document.querySelectorAll('[data-min-role]')) node.hidden = !can(node.dataset.minRole);
  $('nav-my-tokens-item').hidden = !me.actor.adminId;
  $('whoami').hidden = false;
  $('sign-in-view').hidden = true;
  $('console-view').hidden = false;
  $('sign-out').hidden = false;
  return show(viewFromHash());
}

async function ssoEnabled() {
  try {
    const response = await fetch('/admin/auth/config', { credentials: 'omit', cache: 'no-store', headers: { Accept: 'application/json' } });
    // Until a gateway has the single sign-on routes, their absence (404) means the same as `sso: false`.
    if (!response.ok) return false;
    return (await response.json())?.sso === true;
  } catch {
    return false;
  }
}

let ssoPromise = null;

async function showSignIn(message) {
  $('console-view').hidden = true;
  $('sign-out').hidden = true;
  $('whoami').hidden = true;
  // Asked once, when a sign-in is first needed; the form appears with its single sign-on link or without.
  ssoPromise ??= ssoEnabled();
  const sso = await ssoPromise;
  $('sso').hidden = !sso;
  const box = $('sign-in-message');
  if (message) showAlert(box, message);
  else hide(box);
  $('sign-in-view').hidden = false;
  (sso ? $('sso-link') : $('token')).focus();
}

/** Forgets everything the signed-in administrator saw, then shows the sign-in. */
function leave(message) {
  if (session.token) forgetToken();
  session.token = null;
  session.csrfToken = null;
  session.me = null;
  current = null;
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close();
  clearSecret();
  search.source = '';
  $('search-source').value = '';
  renderSearchState();
  forgetSources();
  for (const list of [keys, deliveries, endpoints, bankEvents]) list.clear();
  resetDocuments();
  resetPeople();
  resetOverview();
  hide($('notice'));
  hide($('issue-error'));
  $('issue-form').reset();
  return showSignIn(message);
}

onUnauthorized(() => {
  leave(
    session.token
      ? 'The gateway did not accept the admin token (401), so you were signed out. Sign in again to continue.'
      : 'Your console session has ended (401), so you were signed out. Sign in again to continue.',
  );
});

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = $('token');
  const box = $('sign-in-message');
  const value = input.value.trim();
  if (!value) {
    showAlert(box, 'Enter the admin token.');
    input.focus();
    return;
  }
  const button = event.submitter ?? event.target.querySelector('button[type="submit"]');
  setBusy(button, true);
  session.token = value;
  try {
    // One request decides whether the token is good, so a wrong one counts once against the lockout.
    const me = await api('GET', '/admin/me');
    keepToken(value);
    input.value = '';
    hide(box);
    await enter(me);
  } catch (error) {
    session.token = null;
    const message =
      error.status === 401
        ? 'This admin token was not accepted. Check it (a personal adm_tax_… token, or ADMIN_TOKEN) and try again.'
        : error.status === 429
          ? rateLimitMessage(error)
          : error.message;
    showAlert(box, message);
    input.select();
  } finally {
    setBusy(button, false);
  }
});

$('sign-out').addEventListener('click', async () => {
  const button = $('sign-out');
  if (session.me?.actor.type === 'session') {
    setBusy(button, true);
    try {
      await api('POST', '/admin/auth/logout');
    } catch (error) {
      // Still signed in on the gateway's side: saying otherwise would leave the session open unnoticed.
      if (error.status !== 401) {
        notify(`Signing out failed: ${explain(error)} The session is still open; try again.`, 'error');
        return;
      }
    } finally {
      setBusy(button, false);
    }
  }
  leave();
});

/**
 * A token typed into this tab is the one this tab uses; without one, the page asks whether the browser
 * has a console session (the HttpOnly cookie single sign-on sets, which the page cannot read).
 */
async function start() {
  const params = new URLSearchParams(location.search);
  const refused = params.get('signin') === 'refused';
  // The message is shown once; a reload should not repeat it.
  if (location.search) history.replaceState(null, '', `${location.pathname}${location.hash}`);
  const token = storedToken();
  session.token = token;
  try {
    const me = await api('GET', '/admin/me');
    const entered = enter(me);
    if (refused) notify(REFUSED_SSO, 'error');
    await entered;
    return;
  } catch (error) {
    session.token = null;
    if (token) forgetToken();
    if (error.status === 401 && token)
      return showSignIn('The gateway did not accept the admin token (401), so you were signed out. Sign in again to continue.');
    if (error.status === 401) return showSignIn(refused ? REFUSED_SSO : undefined);
    return showSignIn(error.status === 429 ? rateLimitMessage(error) : error.message);
  }
}

start();
