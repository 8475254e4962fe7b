/** What the slots need of a claimed delivery. */
export interface Slotted {
  id: string;
  endpointId: string;
  /** performance.now() when its lease was taken. */
  claimedAt: number;
}

export interface SlotLimits {
  /** Attempts running at once on this instance (OUTBOUND_WEBHOOKS_CONCURRENCY). */
  total: number;
  /** Attempts running at once per endpoint (OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY). */
  perEndpoint: number;
  /** Deliveries per endpoint claimed ahead, beyond its running slots, to wait for one (the prefetch). */
  ahead: number;
  /** How long after its claim a delivery may still start: its attempt must end within its lease. */
  latestStartMs: number;
}

/**
 * Which claimed deliveries run now and which wait for a slot, per endpoint and for the whole instance. Pure
 * bookkeeping with no I/O: the worker claims what `room` allows, hands the claim to `accept`, starts what it
 * returns, and calls `finished` when an attempt ends. An endpoint whose last claim took all it was allowed
 * is `backlogged`: it may have more due, so it claims again as soon as its waiting deliveries have started.
 */
export class DeliverySlots<D extends Slotted> {
  private readonly running = new Map<string, D>();
  private readonly runningPerEndpoint = new Map<string, number>();
  private readonly waiting = new Map<string, D[]>();
  private waitingCount = 0;
  private readonly backlogged = new Set<string>();

  constructor(
    private readonly limits: SlotLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many deliveries a claim may take now. */
  room(): number {
    return this.limits.total + this.limits.ahead - this.running.size - this.waitingCount;
  }

  /** The most one endpoint may hold here, running and waiting. */
  get perEndpoint(): number {
    return this.limits.perEndpoint + this.limits.ahead;
  }

  /** Per endpoint with deliveries here, how many it holds (running and waiting): the claim takes fewer of those. */
  held(): Map<string, number> {
    const held = new Map<string, number>();
    for (const [endpointId, count] of this.runningPerEndpoint) held.set(endpointId, count);
    for (const [endpointId, queue] of this.waiting) held.set(endpointId, (held.get(endpointId) ?? 0) + queue.length);
    return held;
  }

  /**
   * Takes a claim made with `heldBefore` (what `held` said then): returns what starts now; the rest waits
   * for a slot. Notes which endpoints got all the claim allowed them (they may have more due).
   */
  accept(claimed: readonly D[], heldBefore: ReadonlyMap<string, number>): D[] {
    const counts = new Map<string, number>();
    for (const delivery of claimed) counts.set(delivery.endpointId, (counts.get(delivery.endpointId) ?? 0) + 1);
    for (const endpointId of this.backlogged) {
      // Read (it had room) and nothing found: nothing more due. Not read (no room): as it was.
      if (!counts.has(endpointId) && (heldBefore.get(endpointId) ?? 0) < this.perEndpoint) this.backlogged.delete(endpointId);
    }
    for (const [endpointId, count] of counts) {
      if (count >= this.perEndpoint - (heldBefore.get(endpointId) ?? 0)) this.backlogged.add(endpointId);
      else this.backlogged.delete(endpointId);
    }
    const start: D[] = [];
    for (const delivery of claimed) {
      if (this.hasSlot(delivery.endpointId)) {
        this.occupy(delivery);
        start.push(delivery);
      } else {
        const queue = this.waiting.get(delivery.endpointId);
        if (queue) queue.push(delivery);
        else this.waiting.set(delivery.endpointId, [delivery]);
        this.waitingCount += 1;
      }
    }
    return start;
  }

  /**
   * An attempt ended: its slot is free. Returns the waiting deliveries that start now, those that waited so
   * long their attempt might outlast the lease (to release instead: another instance must never attempt
   * one while this one could), and whether an endpoint that may have more due has started its last waiting
   * delivery (then a claim is due at once).
   */
  finished(delivery: D): { start: D[]; late: D[]; claimNow: boolean } {
    if (!this.running.delete(delivery.id)) return { start: [], late: [], claimNow: false };
    const left = (this.runningPerEndpoint.get(delivery.endpointId) ?? 1) - 1;
    if (left > 0) this.runningPerEndpoint.set(delivery.endpointId, left);
    else this.runningPerEndpoint.delete(delivery.endpointId);
    const start: D[] = [];
    const late: D[] = [];
    let claimNow = false;
    const latestClaim = this.now() - this.limits.latestStartMs;
    for (const [endpointId, queue] of this.waiting) {
      while (queue.length > 0 && this.hasSlot(endpointId)) {
        this.waitingCount -= 1;
        const next = queue.shift()!;
        if (next.claimedAt < latestClaim) late.push(next);
        else {
          this.occupy(next);
          start.push(next);
        }
      }
      if (queue.length === 0) {
        this.waiting.delete(endpointId);
        if (this.backlogged.delete(endpointId)) claimNow = true;
      }
    }
    return { start, late, claimNow };
  }

  /** Everything waiting for a slot, which stops waiting (a shutdown releases it). */
  takeWaiting(): D[] {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.waitingCount = 0;
    return all;
  }

  get runningCount(): number {
    return this.running.size;
  }

  private hasSlot(endpointId: string): boolean {
    return this.running.size < this.limits.total && (this.runningPerEndpoint.get(endpointId) ?? 0) < this.limits.perEndpoint;
  }

  private occupy(delivery: D): void {
    this.running.set(delivery.id, delivery);
    this.runningPerEndpoint.set(delivery.endpointId, (this.runningPerEndpoint.get(delivery.endpointId) ?? 0) + 1);
  }
}
