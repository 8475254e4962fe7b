import { setTimeout as sleep } from 'node:timers/promises';
import { EventLoopLoad } from './event-loop-load';

/** Keeps the event loop running code for `ms`, as a burst of requests would. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('EventLoopLoad', () => {
  const load = new EventLoopLoad();
  beforeAll(() => load.onModuleInit());
  afterAll(() => load.onApplicationShutdown());

  it('is busy while the loop runs code without pause, and not once it waits again', async () => {
    await sleep(120);
    expect(load.busy()).toBe(false);

    let seenBusy = false;
    for (const until = performance.now() + 300; performance.now() < until; ) {
      spin(20);
      // Each pause lets the loop take a turn (its timers included) without waiting for I/O.
      await new Promise((resolve) => setImmediate(resolve));
      seenBusy ||= load.busy();
    }
    expect(seenBusy).toBe(true);

    await sleep(150);
    expect(load.busy()).toBe(false);
  });

  it('is not busy when the loop does a little work at a time', async () => {
    let seenBusy = false;
    for (let i = 0; i < 30; i += 1) {
      spin(2);
      await sleep(10);
      seenBusy ||= load.busy();
    }
    expect(seenBusy).toBe(false);
  });
});
