import fc from 'fast-check';
import { changed, created, DocumentFields, DocumentRecord, NewDocumentEvent } from './document-changes.js';
import { documentAfter, onlyPaymentProgress } from './document-history.js';
import { toDocumentResponse } from './dto/document-response.dto.js';
import { PROVIDER_STATUSES, providerStatusOf, transition } from './lifecycle.js';

const FIELDS: DocumentFields = {
  source: 'acme-erp',
  externalId: 'INV-1',
  type: 'INVOICE',
  taxpayerTaxId: 'DE123',
  taxpayerName: 'Muster GmbH',
  taxpayerCountry: 'DE',
  issueDate: '2026-11-20',
  currency: 'EUR',
  totalAmount: '119.00',
  taxAmount: '19.00',
  providerReference: 'PAY-1',
  metadata: {},
  traceParent: null,
};

type Step = { kind: 'cancel' } | { kind: 'bank'; status: string };

/** A document's life as the gateway writes it (document-changes.ts through the lifecycle): each step's document and event, if any. */
function live(steps: Step[]): { history: Array<{ event: NewDocumentEvent; document: DocumentRecord }>; last: DocumentRecord } {
  let at = Date.parse('2026-12-01T10:00:00.000Z');
  const first = created(FIELDS, new Date(at));
  const history = [{ event: first.event, document: first.document }];
  let document = first.document;
  steps.forEach((step, n) => {
    at += 1000;
    const outcome = transition(document.status, step.kind === 'cancel' ? { kind: 'cancel' } : { kind: 'provider', status: step.status });
    if (outcome.result === 'refused') return;
    const status = outcome.result === 'changed' ? outcome.to : document.status;
    const payment = step.kind === 'bank' ? { status: providerStatusOf(step.status), eventId: `evt-${n}` } : undefined;
    const next = changed(document, { status, payment, traceParent: null }, new Date(at));
    document = next.document;
    if (next.event) history.push({ event: next.event, document });
  });
  return { history, last: document };
}

const steps = fc.array(
  fc.oneof(
    fc.constant<Step>({ kind: 'cancel' }),
    fc.constantFrom(...PROVIDER_STATUSES).map<Step>((status) => ({ kind: 'bank', status })),
  ),
  { maxLength: 12 },
);

describe('documentAfter: the document as each of its events left it, from the document as it is now', () => {
  it('gives, for every event of any life the lifecycle allows, exactly the document the gateway had written with it', () => {
    fc.assert(
      fc.property(steps, (life) => {
        const { history, last } = live(life);
        for (const { event, document } of history) expect(documentAfter(event, last)).toEqual(document);
      }),
      { numRuns: 500 },
    );
  });

  it('leaves the latest event’s document different from the current one only by payment progress that moves no status', () => {
    fc.assert(
      fc.property(steps, (life) => {
        const { history, last } = live(life);
        const archived = toDocumentResponse(history[history.length - 1].document);
        const current = toDocumentResponse(last);
        if (JSON.stringify(archived) !== JSON.stringify(current)) expect(onlyPaymentProgress(current, archived)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('takes payment progress applied at the creation itself, as a new document’s waiting bank events are', () => {
    const at = new Date('2026-12-01T10:00:00.000Z');
    const first = created(FIELDS, at);
    const progressed = changed(first.document, { status: 'PENDING_PAYMENT', payment: { status: 'PROCESSING', eventId: 'evt-waiting' }, traceParent: null }, at);
    expect(progressed.event).toBeNull();
    expect(onlyPaymentProgress(toDocumentResponse(progressed.document), toDocumentResponse(documentAfter(first.event, progressed.document)))).toBe(true);
  });

  it('refuses any other difference: an amount, a status, a payment that moves a status', () => {
    const { history, last } = live([{ kind: 'bank', status: 'PROCESSING' }]);
    const archived = toDocumentResponse(history[0].document);
    expect(onlyPaymentProgress(toDocumentResponse(last), archived)).toBe(true);
    expect(onlyPaymentProgress({ ...toDocumentResponse(last), totalAmount: '1190.00' }, archived)).toBe(false);
    expect(onlyPaymentProgress({ ...toDocumentResponse(last), status: 'PAID' }, archived)).toBe(false);
    const paid = toDocumentResponse(live([{ kind: 'bank', status: 'PAID' }]).last);
    expect(onlyPaymentProgress({ ...paid, status: 'PENDING_PAYMENT' }, archived)).toBe(false);
  });
});
