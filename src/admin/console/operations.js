// The daily traffic: push deliveries (retry), client endpoints (enable/disable) and bank webhook events
// (apply an ambiguous one). Each action's outcome is shown under the row it changed, and the row itself
// is redrawn from the gateway's answer.
import { api, can, handleFailure, withQuery } from './api.js';
import { $, badge, el, formatTime, hide, muted, noteBelow, PagedList, rememberSources, search, setBusy, showAlert, timeEl } from './dom.js';

const RETRY_CHECKS = 6;
const RETRY_CHECK_MS = 1500;

const now = () => formatTime(new Date().toISOString());
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------
// Push deliveries
// ---------------------------------------------------------------------------------------------------

/** Still pending, but its last attempt failed: what the old "Failed" filter hid. */
export const failingNow = (delivery) => delivery.status === 'pending' && delivery.attempts > 0;

function deliveryStatus(delivery) {
  if (delivery.status === 'succeeded') return [badge('succeeded', 'active', 'delivery-status')];
  if (delivery.status === 'failed') return [badge('failed', 'revoked', 'delivery-status'), el('span', { class: 'sub' }, 'no attempts left')];
  const next = delivery.nextAttemptAt ? ['next ', timeEl(delivery.nextAttemptAt)] : [];
  if (failingNow(delivery)) return [badge('failing', 'failing', 'delivery-status'), el('span', { class: 'sub' }, ...next)];
  return [badge('pending', 'expired', 'delivery-status'), el('span', { class: 'sub' }, ...next)];
}

function lastResult(delivery) {
  if (delivery.attempts === 0) return muted('—');
  if (delivery.lastResponseStatus !== null) return `HTTP ${delivery.lastResponseStatus}`;
  return delivery.lastError ?? muted('—');
}

/** A link that opens the document in the Documents section (console.js handles the click). */
export function documentLink(documentId, testid) {
  return el(
    'a',
    {
      href: '#documents',
      class: 'doc-link',
      'data-document-id': documentId,
      'data-testid': testid,
      title: documentId,
      'aria-label': `Open document ${documentId}`,
    },
    el('code', {}, `${documentId.slice(0, 8)}…`),
  );
}

export function deliveryRow(delivery) {
  const retry =
    can('operator') && delivery.status !== 'succeeded'
      ? el(
          'button',
          {
            type: 'button',
            class: 'button button-small',
            'data-retry': delivery.id,
            'data-testid': 'push-retry',
            'aria-label': `Retry delivery ${delivery.id} (${delivery.eventType}) to ${delivery.endpointUrl}`,
          },
          'Retry',
        )
      : null;
  return el(
    'tr',
    {
      'data-testid': 'push-delivery-row',
      'data-id': delivery.id,
      'data-delivery-id': delivery.id,
      'data-status': delivery.status,
      'data-failing': failingNow(delivery) ? 'true' : null,
    },
    el('td', {}, delivery.lastAttemptAt ? timeEl(delivery.lastAttemptAt) : muted('not yet')),
    el('td', {}, deliveryStatus(delivery)),
    el(
      'td',
      {},
      el('span', { class: 'event-type', 'data-testid': 'delivery-event-type' }, delivery.eventType),
      el('span', { class: 'sub' }, 'event ', el('code', {}, delivery.eventId)),
    ),
    el('td', {}, delivery.documentId ? documentLink(delivery.documentId, 'delivery-document') : muted('purged')),
    el('td', { class: 'wrap' }, el('span', { class: 'source' }, delivery.source), el('span', { class: 'sub url' }, delivery.endpointUrl)),
    el('td', { class: 'numeric' }, String(delivery.attempts)),
    el('td', { 'data-testid': 'delivery-last-result' }, lastResult(delivery)),
    el('td', { class: 'actions' }, retry),
  );
}

function outcomeOfRetry(delivery) {
  const result = delivery.lastResponseStatus !== null ? `HTTP ${delivery.lastResponseStatus}` : (delivery.lastError ?? 'no answer');
  if (delivery.status === 'succeeded') return [`Retried: delivered (${result}) at ${formatTime(delivery.lastAttemptAt)}.`, 'success'];
  if (delivery.status === 'failed') return [`Retried: failed again (${result}); no attempts left.`, 'error'];
  const next = delivery.nextAttemptAt ? `; next attempt ${formatTime(delivery.nextAttemptAt)}` : '';
  return [`Retried: failed again (${result})${next}.`, 'error'];
}

/**
 * The retry's own answer says only that the delivery is due now; the attempt follows within a second or
 * so. Reading the document's deliveries a few times shows its result in the same row without a refresh.
 */
async function followRetry(list, before) {
  if (!before.documentId) return;
  for (let check = 0; check < RETRY_CHECKS; check++) {
    await sleep(RETRY_CHECK_MS);
    if (!list.rowOf(before.id)) return;
    let current;
    try {
      const page = await api('GET', withQuery('/admin/outbound-deliveries', { documentId: before.documentId, limit: 200 }));
      current = page.data.find((d) => d.id === before.id);
    } catch {
      return;
    }
    if (!current) return;
    if (current.attempts > before.attempts || current.status !== 'pending') {
      const [message, kind] = outcomeOfRetry(current);
      list.update(current, message, kind);
      return;
    }
  }
  const row = list.rowOf(before.id);
  if (row) noteBelow(row, 'Retry requested; no new attempt recorded yet. Refresh to see its result.', 'info');
}

/** Retry buttons in `list`'s rows. */
export function handleRetries(list) {
  list.table.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-retry]');
    if (!button) return;
    const row = button.closest('tr');
    setBusy(button, true);
    try {
      const delivery = await api('POST', `/admin/outbound-deliveries/${encodeURIComponent(button.dataset.retry)}/retry`);
      list.update(delivery, `Retry requested at ${now()}: the gateway attempts it now.`, 'info');
      followRetry(list, delivery);
    } catch (error) {
      setBusy(button, false);
      handleFailure(error, (message) => noteBelow(row, `The delivery could not be retried: ${message}`, 'error'));
    }
  });
}

export const deliveries = new PagedList({
  name: 'deliveries',
  path: () => {
    const filter = $('filter-delivery-status').value;
    return withQuery('/admin/outbound-deliveries', {
      source: search.source,
      attention: filter === 'attention' ? 'true' : '',
      status: filter === 'attention' ? '' : filter,
    });
  },
  row: deliveryRow,
  empty: () => {
    const filter = $('filter-delivery-status');
    // Neutral: an empty list of what needs attention is good news, not an alarm.
    const which =
      { '': 'No deliveries yet', attention: 'No deliveries need attention' }[filter.value] ??
      `No ${filter.selectedOptions[0].textContent.toLowerCase()} deliveries`;
    return search.source ? `${which} for the source ${search.source}.` : `${which}.`;
  },
});

handleRetries(deliveries);
$('filter-delivery-status').addEventListener('change', () => deliveries.reload());

// ---------------------------------------------------------------------------------------------------
// Client endpoints
// ---------------------------------------------------------------------------------------------------

const DISABLED_BECAUSE = {
  gone: 'its receiver answered 410 Gone',
  failing: 'no successful delivery for 5 days',
  client: 'by its client',
  admin: 'by an administrator',
};

function endpointState(endpoint) {
  if (endpoint.enabled) return [badge('enabled', 'active', 'endpoint-state')];
  return [
    badge('disabled', 'revoked', 'endpoint-state'),
    el('span', { class: 'sub', 'data-testid': 'push-endpoint-disabled' }, DISABLED_BECAUSE[endpoint.disabledReason] ?? 'reason unknown'),
  ];
}

function endpointRow(endpoint) {
  const action = can('operator')
    ? el(
        'button',
        {
          type: 'button',
          class: `button button-small ${endpoint.enabled ? 'button-danger-outline' : ''}`,
          'data-enable': endpoint.enabled ? 'false' : 'true',
          'data-testid': endpoint.enabled ? 'endpoint-disable' : 'endpoint-enable',
          'aria-label': `${endpoint.enabled ? 'Disable' : 'Enable'} endpoint ${endpoint.url} of ${endpoint.source}`,
        },
        endpoint.enabled ? 'Disable' : 'Enable',
      )
    : null;
  return el(
    'tr',
    { 'data-testid': 'push-endpoint-row', 'data-id': endpoint.id, 'data-endpoint-id': endpoint.id, 'data-enabled': String(endpoint.enabled) },
    el('td', {}, el('span', { class: 'source' }, endpoint.source)),
    el('td', { class: 'wrap' }, el('code', { class: 'url' }, endpoint.url), endpoint.description ? el('span', { class: 'sub' }, endpoint.description) : null),
    el(
      'td',
      {},
      endpoint.eventTypes.map((type) => el('span', { class: 'event-type block' }, type)),
    ),
    el('td', {}, endpointState(endpoint)),
    el('td', {}, timeEl(endpoint.updatedAt)),
    el('td', { class: 'actions' }, action),
  );
}

export const endpoints = new PagedList({
  name: 'endpoints',
  path: () => withQuery('/admin/webhook-endpoints', { source: search.source }),
  row: (endpoint) => {
    rememberSources([endpoint.source]);
    return endpointRow(endpoint);
  },
  empty: () => (search.source ? `No endpoints registered by the source ${search.source}.` : 'No endpoints registered.'),
});

endpoints.table.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-enable]');
  if (!button) return;
  const row = button.closest('tr');
  const enabled = button.dataset.enable === 'true';
  setBusy(button, true);
  try {
    const endpoint = await api('PATCH', `/admin/webhook-endpoints/${encodeURIComponent(row.dataset.endpointId)}`, { enabled });
    endpoints.update(
      endpoint,
      enabled
        ? `Enabled at ${now()}: its waiting pushes resume.`
        : `Disabled at ${now()}: its pushes wait until it is enabled again; its client cannot enable it.`,
    );
  } catch (error) {
    setBusy(button, false);
    handleFailure(error, (message) => noteBelow(row, `The endpoint could not be ${enabled ? 'enabled' : 'disabled'}: ${message}`, 'error'));
  }
});

// ---------------------------------------------------------------------------------------------------
// Bank webhook events
// ---------------------------------------------------------------------------------------------------

const OUTCOME_CLASS = { applied: 'active', unmatched: 'expired', ambiguous: 'failing', ignored: 'muted', duplicate: 'muted' };

export function bankEventRow(event) {
  const apply =
    can('admin') && event.outcome === 'ambiguous'
      ? el(
          'button',
          {
            type: 'button',
            class: 'button button-small',
            'data-apply': event.eventId,
            'data-testid': 'bank-apply',
            'aria-label': `Apply bank event ${event.eventId}`,
          },
          'Apply…',
        )
      : null;
  return el(
    'tr',
    { 'data-testid': 'webhook-row', 'data-id': event.eventId, 'data-outcome': event.outcome, 'data-event-id': event.eventId },
    el('td', {}, timeEl(event.receivedAt)),
    el('td', {}, badge(event.outcome, OUTCOME_CLASS[event.outcome] ?? 'muted')),
    el('td', {}, el('code', { class: 'key-id' }, event.eventId)),
    el('td', {}, event.eventType, el('span', { class: 'sub' }, event.status)),
    el('td', {}, el('code', {}, event.providerReference)),
    el('td', {}, event.documentId ? documentLink(event.documentId, 'bank-document') : muted('—')),
    el('td', { class: 'actions' }, apply),
  );
}

export const bankEvents = new PagedList({
  name: 'bank-events',
  path: () => withQuery('/admin/webhook-events', { status: $('filter-outcome').value, providerReference: $('filter-reference').value.trim() }),
  row: bankEventRow,
  idOf: (event) => event.eventId,
  empty: () => ($('filter-outcome').value || $('filter-reference').value.trim() ? 'No bank events match the filter.' : 'No bank events yet.'),
});

$('filter-outcome').addEventListener('change', () => bankEvents.reload());
$('bank-form').addEventListener('submit', (event) => {
  event.preventDefault();
  bankEvents.reload();
});

/** The ambiguous event and the list its row is in, while the apply dialog is open. */
let applying = null;

function choice(document, index) {
  const id = `apply-choice-${index}`;
  return el(
    'div',
    { class: 'choice' },
    el('input', { type: 'radio', name: 'documentId', id, value: document.id, required: true, 'data-testid': 'apply-choice' }),
    el(
      'label',
      { for: id },
      el('strong', {}, document.source),
      ` · ${document.externalId} · ${document.status} · created ${formatTime(document.createdAt)}`,
      el('code', { class: 'key-id block' }, document.id),
    ),
  );
}

/** Apply… buttons in `list`'s rows: a dialog offers the documents with the event's reference. */
export function handleApplies(list) {
  list.table.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-apply]');
    if (!button) return;
    const bankEvent = list.items.find((e) => e.eventId === button.dataset.apply);
    if (!bankEvent) return;
    applying = { list, bankEvent };
    $('apply-event-id').textContent = bankEvent.eventId;
    $('apply-status').textContent = bankEvent.status;
    $('apply-reference').textContent = bankEvent.providerReference;
    hide($('apply-error'));
    $('apply-choices').replaceChildren(el('p', { class: 'muted' }, 'Loading the documents…'));
    $('apply-dialog').showModal();
    try {
      const page = await api('GET', withQuery('/admin/documents', { providerReference: bankEvent.providerReference, limit: 200 }));
      $('apply-choices').replaceChildren(...(page.data.length ? page.data.map(choice) : [el('p', { class: 'muted' }, 'No document has this reference.')]));
    } catch (error) {
      handleFailure(error, (message) => showAlert($('apply-error'), message));
    }
  });
}

handleApplies(bankEvents);

$('apply-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const current = applying;
  const picked = event.target.querySelector('input[name="documentId"]:checked');
  if (!current) return;
  if (!picked) {
    showAlert($('apply-error'), 'Choose the document this event was meant for.');
    return;
  }
  const button = event.target.querySelector('button[type="submit"]');
  setBusy(button, true);
  try {
    const applied = await api('POST', `/admin/webhook-events/${encodeURIComponent(current.bankEvent.eventId)}/apply`, { documentId: picked.value });
    $('apply-dialog').close();
    current.list.update(applied, `Applied at ${now()} to document ${picked.value}.`);
  } catch (error) {
    handleFailure(error, (message) => showAlert($('apply-error'), message));
  } finally {
    setBusy(button, false);
  }
});

$('apply-dialog').addEventListener('close', () => {
  applying = null;
});

/** For the overview's tiles: how many of `path`'s rows there are, up to 100 ("100+" past that). */
export async function countOf(path) {
  const page = await api('GET', withQuery(path, { limit: 100 }));
  return `${page.data.length}${page.nextCursor ? '+' : ''}`;
}
