import { setTimeout as sleep } from 'node:timers/promises';
import { EventLoopLoad } from './event-loop-load.js';

/** Keeps the event loop running code for `ms`, as a burst of requests would. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * Resolves once `busy()` reads false: a window without the work has been sampled. It waits for that, not for
 * a fixed time, since on a loaded machine a timer can fire late; the test's timeout bounds the wait.
 */
async function quiet(load: EventLoopLoad): Promise<true> {
  while (load.busy()) await sleep(25);
  return true;
}

/** Generous: the waits below end on an event, and only a broken EventLoopLoad takes this long. */
const TIMEOUT_MS = 60_000;

describe('EventLoopLoad', () => {
  const load = new EventLoopLoad();
  beforeAll(() => load.onModuleInit());
  afterAll(() => load.onApplicationShutdown());

  it(
    'is busy while the loop runs code without pause, and not once it waits again',
    async () => {
      expect(await quiet(load)).toBe(true);

      let seenBusy = false;
      for (const until = performance.now() + 300; performance.now() < until;) {
        spin(20);
        // Each pause lets the loop take a turn (its timers included) without waiting for I/O.
        await new Promise((resolve) => setImmediate(resolve));
        seenBusy ||= load.busy();
      }
      expect(seenBusy).toBe(true);

      expect(await quiet(load)).toBe(true);
    },
    TIMEOUT_MS,
  );

  it(
    'does not count work done before sampling starts (start-up) as load',
    async () => {
      const busyAfterStartUp = async () => {
        const fresh = new EventLoopLoad();
        spin(1_000);
        fresh.onModuleInit();
        try {
          // After the first window and before the second: the first must not reach back into the spin.
          await sleep(75);
          return fresh.busy();
        } finally {
          fresh.onApplicationShutdown();
        }
      };
      // Up to five tries, as below: a process descheduled within the first window really had it full. A first
      // window that reaches back into the spin is full every time.
      const tries: boolean[] = [];
      do tries.push(await busyAfterStartUp());
      while (tries.at(-1) && tries.length < 5);
      expect(tries).toContain(false);
    },
    TIMEOUT_MS,
  );

  it(
    'is not busy when the loop does a little work at a time',
    async () => {
      const seenBusyDuringLightWork = async () => {
        let seenBusy = false;
        for (let i = 0; i < 30; i += 1) {
          spin(2);
          await sleep(10);
          seenBusy ||= load.busy();
        }
        return seenBusy;
      };
      expect(await quiet(load)).toBe(true);
      // Up to five tries: on a loaded machine the process can be descheduled mid-spin, and that window then
      // really was full. Light work read as load (a threshold too low, a window too short) fails every try.
      const tries: boolean[] = [];
      do tries.push(await seenBusyDuringLightWork());
      while (tries.at(-1) && tries.length < 5);
      expect(tries).toContain(false);
    },
    TIMEOUT_MS,
  );
});
