// Documents, read-only: found by source or providerReference, each opened with its feed events, the push
// deliveries of those events, the bank events naming its reference and the other sources' documents that
// claim it.
import { api, handleFailure, withQuery } from './api.js';
import { $, badge, el, hide, muted, PagedList, rememberSources, showAlert, timeEl } from './dom.js';
import { bankEventRow, deliveryRow, documentLink, handleApplies, handleRetries } from './operations.js';

const STATUS_CLASS = { PENDING_PAYMENT: 'expired', PAID: 'active', PAYMENT_FAILED: 'revoked', CANCELLED: 'muted', REFUNDED: 'muted' };

/** The filters of the last search, so More and Refresh page through what was asked, not what is typed since. */
let criteria = null;

function documentStatus(status) {
  return badge(status, STATUS_CLASS[status] ?? 'muted', 'document-status');
}

function documentRow(document) {
  return el(
    'tr',
    { 'data-testid': 'document-row', 'data-id': document.id, 'data-document-id': document.id },
    el('td', {}, timeEl(document.createdAt)),
    el('td', {}, el('span', { class: 'source' }, document.source)),
    el('td', {}, el('code', {}, document.externalId)),
    el('td', {}, document.type),
    el('td', {}, documentStatus(document.status)),
    el('td', {}, document.providerReference ? el('code', {}, document.providerReference) : muted('—')),
    el('td', { class: 'numeric' }, `${document.totalAmount} ${document.currency}`),
    el(
      'td',
      { class: 'actions' },
      el(
        'button',
        {
          type: 'button',
          class: 'button button-small',
          'data-open': document.id,
          'data-testid': 'document-open',
          'aria-label': `Open document ${document.externalId} of ${document.source}`,
        },
        'Open',
      ),
    ),
  );
}

const documents = new PagedList({
  name: 'documents',
  path: () => withQuery('/admin/documents', criteria ?? {}),
  row: (document) => {
    rememberSources([document.source]);
    return documentRow(document);
  },
  empty: 'No documents match.',
});

const documentDeliveries = new PagedList({
  name: 'document-deliveries',
  path: () => withQuery('/admin/outbound-deliveries', { documentId: shownDocumentId }),
  row: deliveryRow,
  empty: 'No push deliveries: the source has no endpoint for these events, or none was registered then.',
});
handleRetries(documentDeliveries);

const documentBank = new PagedList({
  name: 'document-bank',
  path: () => withQuery('/admin/webhook-events', { providerReference: shownReference }),
  row: bankEventRow,
  idOf: (event) => event.eventId,
  empty: 'No bank events with this reference.',
  alert: $('document-detail-alert'),
});
handleApplies(documentBank);

let shownDocumentId = null;
let shownReference = null;

$('documents-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const form = event.target;
  const value = (name) => form.elements[name].value.trim();
  if (!value('source') && !value('providerReference')) {
    showAlert($('documents-alert'), 'Enter a source or a provider reference (or both).');
    form.elements.source.focus();
    return;
  }
  criteria = { source: value('source'), providerReference: value('providerReference'), status: value('status'), type: value('type') };
  refreshDocuments();
});

/** The search again with the same filters, and the open document again. */
export async function refreshDocuments() {
  const tasks = [];
  if (criteria) {
    $('documents-results').hidden = false;
    tasks.push(documents.reload());
  }
  if (shownDocumentId) tasks.push(openDocument(shownDocumentId, { focus: false }));
  await Promise.all(tasks);
}

documents.table.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-open]');
  if (button) openDocument(button.dataset.open);
});

function field(label, ...content) {
  return el('div', {}, el('dt', {}, label), el('dd', {}, ...content));
}

function fieldsOf(document) {
  const metadata = Object.entries(document.metadata ?? {});
  return [
    field('Id', el('code', { 'data-testid': 'document-id' }, document.id)),
    field('Source', document.source),
    field('External id', el('code', {}, document.externalId)),
    field('Type', document.type),
    field('Status', documentStatus(document.status)),
    field('Provider reference', document.providerReference ? el('code', {}, document.providerReference) : muted('—')),
    field(
      'Payment',
      document.payment?.status ?? muted('no bank event yet'),
      document.payment?.lastEventId ? el('span', { class: 'sub' }, 'event ', el('code', {}, document.payment.lastEventId)) : null,
    ),
    field('Amount', `${document.totalAmount} ${document.currency}`, el('span', { class: 'sub' }, `tax ${document.taxAmount}`)),
    field('Taxpayer', document.taxpayer.name, el('span', { class: 'sub' }, `${document.taxpayer.taxId} · ${document.taxpayer.country}`)),
    field('Issued', document.issueDate),
    field('Created', timeEl(document.createdAt)),
    field('Updated', timeEl(document.updatedAt)),
    metadata.length ? field('Metadata', ...metadata.map(([k, v]) => el('span', { class: 'block' }, el('code', {}, k), ` ${v}`))) : null,
  ];
}

function eventRow(event) {
  return el(
    'tr',
    { 'data-testid': 'document-event-row', 'data-id': event.id },
    el('td', {}, timeEl(event.createdAt)),
    el('td', {}, el('code', {}, event.id)),
    el('td', {}, el('span', { class: 'event-type' }, event.type)),
    el('td', {}, event.previousStatus ? [el('span', { class: 'muted' }, event.previousStatus), ' → '] : null, event.status),
  );
}

/** Another source's document with the same reference, and whether the reference's bank events go to it. */
function claimItem(claim, bankEventsGoTo) {
  const role =
    claim.id === bankEventsGoTo
      ? badge('gets its bank events', 'active', 'claim-role')
      : claim.receivedBankEvents
        ? badge('received bank events', 'muted', 'claim-role')
        : badge('gets none of them', 'muted', 'claim-role');
  return el(
    'li',
    { 'data-testid': 'document-claim', 'data-document-id': claim.id },
    documentLink(claim.id, 'claim-document'),
    ' of ',
    el('span', { class: 'source' }, claim.source),
    ` · ${claim.externalId} · ${claim.status} · created `,
    timeEl(claim.createdAt),
    ' ',
    role,
  );
}

/**
 * Where the reference's bank events go (the gateway decides, GET /admin/documents/{id}), and which other
 * sources' documents claim the reference: a later claim of an established reference gets none of its
 * events, and an administrator should know of it. Nothing to say for a reference no other source uses.
 */
function renderClaims(detail) {
  const box = $('document-claims');
  const { document, bankEventsGoTo, referenceClaims } = detail;
  if (!referenceClaims.length) {
    hide(box);
    return;
  }
  let where;
  if (bankEventsGoTo === document.id)
    where = ['Its bank events go to this document, the one they were first applied to. Other sources also claim the reference:'];
  else if (bankEventsGoTo)
    where = [
      "Its bank events go to another source's document, the one they were first applied to; this document gets none of them. The documents that claim it:",
    ];
  else
    where = [
      'Documents of several sources claim this reference and none, or more than one, has received its bank events: each event is held as ambiguous until an admin applies it (Bank events, Apply…). The others:',
    ];
  box.replaceChildren(
    el('p', { 'data-testid': 'document-claims-where' }, ...where),
    el('ul', {}, ...referenceClaims.map((claim) => claimItem(claim, bankEventsGoTo))),
  );
  box.hidden = false;
}

/** Shows a document of any source with its events, deliveries and bank events, below the search. */
export async function openDocument(id, { focus = true } = {}) {
  const panel = $('document-detail');
  shownDocumentId = id;
  hide($('document-detail-alert'));
  panel.hidden = false;
  panel.setAttribute('aria-busy', 'true');
  try {
    const detail = await api('GET', `/admin/documents/${encodeURIComponent(id)}`);
    if (shownDocumentId !== id) return;
    const { document } = detail;
    $('document-detail-title').textContent = `Document ${document.externalId} of ${document.source}`;
    $('document-fields').replaceChildren(...fieldsOf(document).filter(Boolean));
    $('document-events-body').replaceChildren(...detail.events.map(eventRow));
    $('document-events-empty').hidden = detail.events.length > 0;
    // The document's answer carries its first page of deliveries; More reads on from its cursor.
    documentDeliveries.clear();
    documentDeliveries.items = detail.deliveries;
    documentDeliveries.nextCursor = detail.deliveriesNextCursor;
    documentDeliveries.render();
    shownReference = document.providerReference;
    $('document-bank').hidden = !shownReference;
    if (shownReference) {
      $('document-bank-reference').textContent = shownReference;
      renderClaims(detail);
      await documentBank.reload();
    }
    if (focus) {
      panel.focus({ preventScroll: true });
      panel.scrollIntoView({ block: 'start' });
    }
  } catch (error) {
    handleFailure(error, (message) => {
      $('document-fields').replaceChildren();
      showAlert($('document-detail-alert'), `The document could not be loaded: ${message}`);
    });
  } finally {
    panel.removeAttribute('aria-busy');
  }
}

$('document-close').addEventListener('click', closeDocument);

export function closeDocument() {
  shownDocumentId = null;
  shownReference = null;
  $('document-detail').hidden = true;
}

/** Signed out: nothing of the last search or document stays on the page. */
export function resetDocuments() {
  criteria = null;
  closeDocument();
  documents.clear();
  documentDeliveries.clear();
  documentBank.clear();
  hide($('document-claims'));
  $('documents-results').hidden = true;
  $('documents-form').reset();
  hide($('documents-alert'));
}
