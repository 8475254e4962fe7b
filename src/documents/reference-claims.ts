/**
 * A providerReference is unique within a source only, so documents of several sources may claim one, while
 * the bank names a payment by the reference alone. A document is established for its reference once a bank
 * event has been applied to it (its payment details are set): the reference's events keep going to it, and
 * a later claim by another source is shown to administrators instead of holding its payments (README,
 * Security model). Bank events are purged after RETENTION_BANK_EVENTS; the document keeps the mark.
 */
export interface ReferenceClaim {
  id: string;
  /** A bank event has been applied to it. */
  established: boolean;
}

/**
 * The document the bank's events for a reference go to, of the documents claiming it: the one established,
 * else the only one; null when they are ambiguous (several and none established, or several established
 * through administrators' applies), applied to none until an administrator applies them: for every bank
 * event (PaymentsService) and for the administrators' view. Given some of the claims only, it needs every
 * established one among them, and two at least.
 */
export function bankEventTarget(claims: readonly ReferenceClaim[]): string | null {
  const established = claims.filter((claim) => claim.established);
  if (established.length > 0) return established.length === 1 ? established[0].id : null;
  return claims.length === 1 ? claims[0].id : null;
}
