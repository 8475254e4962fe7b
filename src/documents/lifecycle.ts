/**
 * The document lifecycle of CONTRACT §2.4 as data, and the one function that applies it. The cancel
 * endpoint and the bank webhook both go through `transition`; nothing else changes a status.
 */
export const DOCUMENT_STATUSES = ['PENDING_PAYMENT', 'PAID', 'PAYMENT_FAILED', 'CANCELLED', 'REFUNDED'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

export const ALLOWED_TRANSITIONS: Record<DocumentStatus, readonly DocumentStatus[]> = {
  PENDING_PAYMENT: ['PAID', 'PAYMENT_FAILED', 'CANCELLED'],
  PAYMENT_FAILED: ['PAID', 'CANCELLED'],
  PAID: ['REFUNDED'],
  REFUNDED: [],
  CANCELLED: [],
};

/** Provider statuses (compared case-insensitively) and the document status each leads to; null: recorded only. */
export const PROVIDER_STATUS_EFFECT: Record<string, DocumentStatus | null> = {
  PENDING: null,
  PROCESSING: null,
  PAID: 'PAID',
  FAILED: 'PAYMENT_FAILED',
  REFUNDED: 'REFUNDED',
};

export type LifecycleInput = { kind: 'cancel' } | { kind: 'provider'; status: string };

export type LifecycleOutcome =
  /** The document moves to `to`. */
  | { result: 'changed'; to: DocumentStatus }
  /** A known provider status that only updates the payment information. */
  | { result: 'recorded' }
  /** Not allowed from the current status (late, out of order, or unknown): nothing changes. */
  | { result: 'refused'; reason: 'unknown_status' | 'not_allowed' };

/** Payment progress (PENDING, PROCESSING) is news only while the document still awaits its payment. */
const AWAITING_PAYMENT: readonly DocumentStatus[] = ['PENDING_PAYMENT', 'PAYMENT_FAILED'];

export function isFinal(status: DocumentStatus): boolean {
  return ALLOWED_TRANSITIONS[status].length === 0;
}

export function transition(current: DocumentStatus, input: LifecycleInput): LifecycleOutcome {
  let target: DocumentStatus;
  if (input.kind === 'cancel') {
    target = 'CANCELLED';
  } else {
    const key = input.status.toUpperCase();
    if (!Object.hasOwn(PROVIDER_STATUS_EFFECT, key)) return { result: 'refused', reason: 'unknown_status' };
    const effect = PROVIDER_STATUS_EFFECT[key];
    if (effect === null) return AWAITING_PAYMENT.includes(current) ? { result: 'recorded' } : { result: 'refused', reason: 'not_allowed' };
    target = effect;
  }
  return ALLOWED_TRANSITIONS[current].includes(target) ? { result: 'changed', to: target } : { result: 'refused', reason: 'not_allowed' };
}

/** A provider status's effect on a document in one status: the status after (the same when it is only recorded). */
export interface ProviderTransition {
  from: DocumentStatus;
  /** Upper case, as `transition` compares it. */
  providerStatus: string;
  to: DocumentStatus;
}

/**
 * `transition` for every known provider status, as rows; a pair that is not listed is refused. For a
 * decision made inside SQL (the bank webhook decides and writes in one statement): the lifecycle stays
 * this one function.
 */
export function providerTransitions(): ProviderTransition[] {
  return DOCUMENT_STATUSES.flatMap((from) =>
    Object.keys(PROVIDER_STATUS_EFFECT).flatMap((providerStatus) => {
      const outcome = transition(from, { kind: 'provider', status: providerStatus });
      if (outcome.result === 'refused') return [];
      return [{ from, providerStatus, to: outcome.result === 'changed' ? outcome.to : from }];
    }),
  );
}
