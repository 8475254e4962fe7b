import fc from 'fast-check';
import { ALLOWED_TRANSITIONS, DOCUMENT_STATUSES, DocumentStatus, isFinal, LifecycleInput, PROVIDER_STATUS_EFFECT, providerTransitions, transition } from './lifecycle';

/** How far along a document is; every allowed move goes strictly up. */
const PROGRESS: Record<DocumentStatus, number> = { PENDING_PAYMENT: 0, PAYMENT_FAILED: 1, PAID: 2, CANCELLED: 3, REFUNDED: 3 };

describe('lifecycle.transition', () => {
  it.each<[DocumentStatus, LifecycleInput, ReturnType<typeof transition>]>([
    ['PENDING_PAYMENT', { kind: 'provider', status: 'PAID' }, { result: 'changed', to: 'PAID' }],
    ['PENDING_PAYMENT', { kind: 'provider', status: 'failed' }, { result: 'changed', to: 'PAYMENT_FAILED' }],
    ['PENDING_PAYMENT', { kind: 'provider', status: 'Processing' }, { result: 'recorded' }],
    ['PENDING_PAYMENT', { kind: 'cancel' }, { result: 'changed', to: 'CANCELLED' }],
    ['PAYMENT_FAILED', { kind: 'provider', status: 'PAID' }, { result: 'changed', to: 'PAID' }],
    ['PAYMENT_FAILED', { kind: 'provider', status: 'PENDING' }, { result: 'recorded' }],
    ['PAYMENT_FAILED', { kind: 'cancel' }, { result: 'changed', to: 'CANCELLED' }],
    ['PAID', { kind: 'provider', status: 'REFUNDED' }, { result: 'changed', to: 'REFUNDED' }],
    ['PAID', { kind: 'provider', status: 'FAILED' }, { result: 'refused', reason: 'not_allowed' }],
    ['PAID', { kind: 'provider', status: 'PROCESSING' }, { result: 'refused', reason: 'not_allowed' }],
    ['PAID', { kind: 'cancel' }, { result: 'refused', reason: 'not_allowed' }],
    ['PENDING_PAYMENT', { kind: 'provider', status: 'REFUNDED' }, { result: 'refused', reason: 'not_allowed' }],
    ['CANCELLED', { kind: 'provider', status: 'PAID' }, { result: 'refused', reason: 'not_allowed' }],
    ['REFUNDED', { kind: 'cancel' }, { result: 'refused', reason: 'not_allowed' }],
    ['PENDING_PAYMENT', { kind: 'provider', status: 'CHARGEBACK' }, { result: 'refused', reason: 'unknown_status' }],
    ['PENDING_PAYMENT', { kind: 'provider', status: 'constructor' }, { result: 'refused', reason: 'unknown_status' }],
  ])('%s + %j → %j', (from, input, expected) => {
    expect(transition(from, input)).toEqual(expected);
  });

  it('knows REFUNDED and CANCELLED as the only final states', () => {
    expect(DOCUMENT_STATUSES.filter(isFinal)).toEqual(['CANCELLED', 'REFUNDED']);
  });

  it('never moves a document backwards or out of a final state, whatever arrives in whatever order', () => {
    const providerStatus = fc.oneof(
      fc.constantFrom('PENDING', 'PROCESSING', 'PAID', 'FAILED', 'REFUNDED', 'paid', 'Failed', 'refunded'),
      fc.string({ maxLength: 12 }),
    );
    const input: fc.Arbitrary<LifecycleInput> = fc.oneof(
      fc.constant({ kind: 'cancel' as const }),
      providerStatus.map((status) => ({ kind: 'provider' as const, status })),
    );
    fc.assert(
      fc.property(fc.constantFrom(...DOCUMENT_STATUSES), fc.array(input, { maxLength: 30 }), (start, inputs) => {
        let status = start;
        for (const step of inputs) {
          const outcome = transition(status, step);
          if (isFinal(status)) expect(outcome.result).toBe('refused');
          if (outcome.result === 'changed') {
            expect(ALLOWED_TRANSITIONS[status]).toContain(outcome.to);
            expect(PROGRESS[outcome.to]).toBeGreaterThan(PROGRESS[status]);
            status = outcome.to;
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('lists, for SQL, exactly the provider statuses transition() lets change or record, and where each leads', () => {
    const listed = new Map(providerTransitions().map((t) => [`${t.from} ${t.providerStatus}`, t.to]));
    for (const from of DOCUMENT_STATUSES) {
      for (const providerStatus of Object.keys(PROVIDER_STATUS_EFFECT)) {
        const outcome = transition(from, { kind: 'provider', status: providerStatus });
        const expected = outcome.result === 'refused' ? undefined : outcome.result === 'changed' ? outcome.to : from;
        expect([from, providerStatus, listed.get(`${from} ${providerStatus}`)]).toEqual([from, providerStatus, expected]);
      }
    }
    expect(listed.get('PENDING_PAYMENT PAID')).toBe('PAID');
    expect(listed.get('PENDING_PAYMENT PROCESSING')).toBe('PENDING_PAYMENT');
    expect(listed.has('PAID FAILED')).toBe(false);
  });
});
