/**
 * `npm run bench:rate-limit`: how long one shared rate-limit check takes, from the guard's call to its answer,
 * to choose the time after which the limiter counts on its own (docs/performance.md, "The shared rate limit").
 * The real store (SharedRateLimit, the gateway's Lua script over ioredis) against the Redis of REDIS_URL
 * (redis://127.0.0.1:6379), without its time limit, so that every check's whole time is seen. Each round
 * opens a fresh connection, as a starting instance does, and at once sends RATE checks a second (open loop:
 * a late check does not hold the next one back) for SECONDS, each of them for one of 100 keys. Scenarios,
 * one after the other in every round:
 *   idle   nothing else running in this process or on the machine
 *   busy   as many CPU spinners as the machine has cores, and this process's event loop kept busy with
 *          synchronous slices of work (a gateway answering other requests meanwhile)
 * Reported per scenario: how long the connection took to be ready and how many checks were refused before
 * it was (at once: no offline queue), then the first FIRST checks answered apart from the rest, each with
 * p50, p99, p99.9 and max, and how many took longer than each candidate limit.
 *
 *   npm run bench:rate-limit          (ROUNDS=3 SECONDS=20 RATE=1000 FIRST=50 SLICE_MS=2)
 */
import { spawn, ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { SharedRateLimit } from '../src/auth/shared-rate-limit.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 20);
const RATE = Number(process.env.RATE ?? 1000);
const FIRST = Number(process.env.FIRST ?? 50);
const SLICE_MS = Number(process.env.SLICE_MS ?? 2);
const CANDIDATES = [50, 100, 250, 500, 1000];
const KEYS = 100;

function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** CPU spinners in processes of their own, one per core: the machine is busy, not just this process. */
function hogs(): ChildProcess[] {
  return Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

/** Keeps this event loop busy with synchronous slices, as a gateway's other requests would. */
function busyLoop(): () => void {
  let running = true;
  const slice = () => {
    if (!running) return;
    spin(SLICE_MS);
    setImmediate(slice);
  };
  setImmediate(slice);
  return () => (running = false);
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const over = CANDIDATES.map((limit) => `>${limit}: ${sorted.filter((t) => t > limit).length}`).join(', ');
  return `n ${sorted.length}, p50 ${at(0.5).toFixed(2)} ms, p99 ${at(0.99).toFixed(2)} ms, p99.9 ${at(0.999).toFixed(2)} ms, max ${sorted[sorted.length - 1].toFixed(2)} ms (${over})`;
}

async function scenario(name: string, busy: boolean, round: number): Promise<void> {
  const spinners = busy ? hogs() : [];
  const stopLoop = busy ? busyLoop() : () => undefined;
  const opened = performance.now();
  const store = new SharedRateLimit(REDIS_URL, 600_000);
  let readyMs = 0;
  void store.ready().then(() => (readyMs = performance.now() - opened));
  let refused = 0;
  try {
    const times: number[] = [];
    const pending: Promise<void>[] = [];
    const total = SECONDS * RATE;
    const start = performance.now();
    let sent = 0;
    while (sent < total) {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * RATE) + 1);
      for (; sent < due; sent += 1) {
        const began = performance.now();
        const index = sent;
        pending.push(
          store.take(`bench-${round}-${index % KEYS}`, 1_000_000).then(
            () => void (times[index] = performance.now() - began),
            () => void (refused += 1),
          ),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await Promise.all(pending);
    const answered = times.filter((time) => time !== undefined);
    console.log(`round ${round} ${name} ready after ${readyMs.toFixed(1)} ms, ${refused} checks refused before`);
    console.log(`round ${round} ${name} first ${FIRST}: ${summary(answered.slice(0, FIRST))}`);
    console.log(`round ${round} ${name} the rest:  ${summary(answered.slice(FIRST))}`);
  } finally {
    stopLoop();
    await store.close();
    for (const spinner of spinners) spinner.kill('SIGKILL');
  }
}

for (let round = 1; round <= ROUNDS; round += 1) {
  await scenario('idle', false, round);
  await scenario('busy', true, round);
}
