import fc from 'fast-check';
import { DOCUMENT_STATUSES, DocumentStatus, LIFECYCLE, LifecycleInput, PROVIDER_STATUSES, transition } from './lifecycle.js';

/** How far along a document is; every allowed move goes strictly up. */
const PROGRESS: Record<DocumentStatus, number> = { PENDING_PAYMENT: 0, PAYMENT_FAILED: 1, PAID: 2, CANCELLED: 3, REFUNDED: 3 };
/** The final statuses, as the README states them: nothing moves a document out of one. */
const FINAL: DocumentStatus[] = ['CANCELLED', 'REFUNDED'];

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
    // The bank cannot cancel, whatever the case of what it sends.
    ['PENDING_PAYMENT', { kind: 'provider', status: 'cancel' }, { result: 'refused', reason: 'unknown_status' }],
    ['PENDING_PAYMENT', { kind: 'provider', status: 'CANCEL' }, { result: 'refused', reason: 'unknown_status' }],
  ])('%s + %j → %j', (from, input, expected) => {
    expect(transition(from, input)).toEqual(expected);
  });

  it('knows REFUNDED and CANCELLED as the only final states', () => {
    expect(DOCUMENT_STATUSES.filter((status) => !LIFECYCLE.some((row) => row.from === status))).toEqual(FINAL);
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
          if (FINAL.includes(status)) expect(outcome.result).toBe('refused');
          if (outcome.result === 'changed') {
            expect(PROGRESS[outcome.to]).toBeGreaterThan(PROGRESS[status]);
            status = outcome.to;
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('has one row per (status, event) and none out of a final state, so the table reads the same in TypeScript and in SQL', () => {
    const keys = LIFECYCLE.map((row) => `${row.from} ${row.on}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(LIFECYCLE.filter((row) => FINAL.includes(row.from))).toEqual([]);
    for (const row of LIFECYCLE) {
      expect([...PROVIDER_STATUSES, 'cancel']).toContain(row.on);
      const outcome = transition(row.from, row.on === 'cancel' ? { kind: 'cancel' } : { kind: 'provider', status: row.on });
      expect(outcome).toEqual(row.to === row.from ? { result: 'recorded' } : { result: 'changed', to: row.to });
    }
  });
});
