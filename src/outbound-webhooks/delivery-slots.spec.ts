import { jest } from '@jest/globals';
import { DeliverySlots, Slotted } from './delivery-slots.js';

const LIMITS = { total: 4, perEndpoint: 2, ahead: 2, latestStartMs: 10_000 };
let next = 0;
const delivery = (endpointId: string): Slotted => ({ id: String(++next), endpointId, claimedAt: performance.now() });

describe('DeliverySlots', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('starts what has a slot, per endpoint and in all, and keeps the rest waiting for one', () => {
    const slots = new DeliverySlots(LIMITS);
    expect(slots.room()).toBe(6);
    const claimed = [delivery('a'), delivery('a'), delivery('a'), delivery('b'), delivery('b'), delivery('c')];
    const started = slots.accept(claimed, new Map());
    // Two per endpoint, four in all: a, a, b, b start; the third of `a` and `c` wait.
    expect(started.map((d) => d.endpointId)).toEqual(['a', 'a', 'b', 'b']);
    expect(slots.runningCount).toBe(4);
    expect(slots.room()).toBe(0);
    expect(slots.held()).toEqual(
      new Map([
        ['a', 3],
        ['b', 2],
        ['c', 1],
      ]),
    );

    // When one of `a` ends, its waiting delivery starts (the instance has a slot again).
    expect(slots.finished(started[0]).start.map((d) => d.id)).toEqual([claimed[2].id]);
    // When one of `b` ends, `c` waits no longer.
    expect(slots.finished(started[2]).start.map((d) => d.id)).toEqual([claimed[5].id]);
  });

  it('releases instead of starting a delivery that waited so long its attempt could outlast its lease', () => {
    const slots = new DeliverySlots({ ...LIMITS, total: 1 });
    const [running] = slots.accept([delivery('a'), delivery('a')], new Map());
    jest.advanceTimersByTime(LIMITS.latestStartMs + 1);
    const { start, late } = slots.finished(running);
    expect(start).toEqual([]);
    expect(late).toHaveLength(1);
    expect(slots.held()).toEqual(new Map());
  });

  it('asks for a claim at once when an endpoint that got all it was allowed has started its last waiting delivery', () => {
    const slots = new DeliverySlots(LIMITS);
    // perEndpoint 2 + ahead 2: a claim of four for `a` is all it was allowed, so more may be due.
    const started = slots.accept([delivery('a'), delivery('a'), delivery('a'), delivery('a')], new Map());
    expect(slots.finished(started[0]).claimNow).toBe(false);
    expect(slots.finished(started[1]).claimNow).toBe(true);

    // An endpoint that got less than it was allowed had nothing more due.
    const quiet = new DeliverySlots(LIMITS);
    const few = quiet.accept([delivery('b'), delivery('b'), delivery('b')], new Map());
    expect(quiet.finished(few[0]).claimNow).toBe(false);
  });

  it('hands over what waits on shutdown, and ignores an attempt it does not know', () => {
    const slots = new DeliverySlots({ ...LIMITS, total: 1 });
    slots.accept([delivery('a'), delivery('a'), delivery('b')], new Map());
    expect(slots.takeWaiting().map((d) => d.endpointId)).toEqual(['a', 'b']);
    expect(slots.finished(delivery('z'))).toEqual({ start: [], late: [], claimNow: false });
  });
});
