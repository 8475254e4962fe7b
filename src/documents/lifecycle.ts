/**
 * The document lifecycle (README, "Documents, lifecycle and the event feed") as one table, read by `transition`
 * alone: the cancel endpoint, a bank event, the events applied to a new document, an administrator's apply.
 * Nothing else decides a status; `changed` (document-changes.ts) makes the change with its event.
 */
export const DOCUMENT_STATUSES = ['PENDING_PAYMENT', 'PAID', 'PAYMENT_FAILED', 'CANCELLED', 'REFUNDED'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** The bank's payment statuses the gateway knows (compared case-insensitively); any other is recorded and changes nothing. */
export const PROVIDER_STATUSES = ['PENDING', 'PROCESSING', 'PAID', 'FAILED', 'REFUNDED'] as const;
export type ProviderStatus = (typeof PROVIDER_STATUSES)[number];

/**
 * What moves a document: its source cancels it, or the bank reports a payment status. `cancel` is in
 * lower case, which no provider status is once upper-cased, so the bank can never send a cancel.
 */
export type LifecycleEvent = 'cancel' | ProviderStatus;

export interface LifecycleRow {
  from: DocumentStatus;
  on: LifecycleEvent;
  /** The status after; the same as `from` when only the payment status is recorded. */
  to: DocumentStatus;
}

/**
 * Every (status, event) that does something. Anything not listed is refused and changes nothing: a late
 * or out-of-order event, a cancel of a paid document, anything in a final state (CANCELLED, REFUNDED).
 * Payment progress (PENDING, PROCESSING) is news only while the document still awaits its payment.
 */
export const LIFECYCLE: readonly LifecycleRow[] = [
  { from: 'PENDING_PAYMENT', on: 'cancel', to: 'CANCELLED' },
  { from: 'PENDING_PAYMENT', on: 'PENDING', to: 'PENDING_PAYMENT' },
  { from: 'PENDING_PAYMENT', on: 'PROCESSING', to: 'PENDING_PAYMENT' },
  { from: 'PENDING_PAYMENT', on: 'PAID', to: 'PAID' },
  { from: 'PENDING_PAYMENT', on: 'FAILED', to: 'PAYMENT_FAILED' },
  { from: 'PAYMENT_FAILED', on: 'cancel', to: 'CANCELLED' },
  { from: 'PAYMENT_FAILED', on: 'PENDING', to: 'PAYMENT_FAILED' },
  { from: 'PAYMENT_FAILED', on: 'PROCESSING', to: 'PAYMENT_FAILED' },
  { from: 'PAYMENT_FAILED', on: 'PAID', to: 'PAID' },
  { from: 'PAID', on: 'REFUNDED', to: 'REFUNDED' },
];

export type LifecycleInput = { kind: 'cancel' } | { kind: 'provider'; status: string };

export type LifecycleOutcome =
  /** The document moves to `to`. */
  | { result: 'changed'; to: DocumentStatus }
  /** A known provider status that only updates the payment information. */
  | { result: 'recorded' }
  /** Not allowed from the current status (late, out of order, or unknown): nothing changes. */
  | { result: 'refused'; reason: 'unknown_status' | 'not_allowed' };

const KNOWN_PROVIDER_STATUSES: ReadonlySet<string> = new Set(PROVIDER_STATUSES);

/** A bank's payment status as the lifecycle's table and a document's paymentStatus name it: the bank may send any case. */
export function providerStatusOf(status: string): string {
  return status.toUpperCase();
}

export function transition(current: DocumentStatus, input: LifecycleInput): LifecycleOutcome {
  const on = input.kind === 'cancel' ? 'cancel' : providerStatusOf(input.status);
  if (input.kind === 'provider' && !KNOWN_PROVIDER_STATUSES.has(on)) return { result: 'refused', reason: 'unknown_status' };
  const row = LIFECYCLE.find((candidate) => candidate.from === current && candidate.on === on);
  if (!row) return { result: 'refused', reason: 'not_allowed' };
  return row.to === current ? { result: 'recorded' } : { result: 'changed', to: row.to };
}
