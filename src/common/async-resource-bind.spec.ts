import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { useLeanAsyncResourceBind } from './async-resource-bind';

/**
 * MB promoted out of the young generation when 1,000 bound functions, each reaching 4 KB, are dropped:
 * measured in a process of its own, whose old generation nothing else changes meanwhile.
 */
function promotedByDroppedBindings(lean: boolean): number {
  const script = `
    const { AsyncResource } = require('node:async_hooks');
    const { getHeapSpaceStatistics } = require('node:v8');
    if (${lean}) require('./src/common/async-resource-bind').useLeanAsyncResourceBind();
    const oldGeneration = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
    // Whatever is young now is promoted by the collections below too: promote it before counting.
    gc({ type: 'major' });
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    const before = oldGeneration();
    for (let i = 0; i < 1000; i++) {
      const payload = 'x'.repeat(4096) + i;
      AsyncResource.bind(() => payload);
    }
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    process.stdout.write(String((oldGeneration() - before) / 1e6));`;
  const flags = ['--expose-gc', '--no-concurrent-sweeping', '-r', 'ts-node/register/transpile-only'];
  const env = { ...process.env, NODE_OPTIONS: '' };
  return Number(execFileSync(process.execPath, [...flags, '-e', script], { cwd: join(__dirname, '../..'), env, encoding: 'utf8' }));
}

describe('AsyncResource.bind without the deprecated accessor', () => {
  const nodeBind = AsyncResource.bind;

  afterEach(() => {
    AsyncResource.bind = nodeBind;
  });

  it("lets a dropped bound function's closure die young, where Node 20's own keeps it to the next full collection", () => {
    // Node's accessor pins the closure only where util.deprecate sets the wrapper's prototype to the
    // accessor (Node 20; later versions changed that, nodejs/node#58218, and dropped the accessor).
    const accessor = Object.getOwnPropertyDescriptor(nodeBind(() => undefined), 'asyncResource')?.get;
    const nodePinsClosures = accessor !== undefined && Object.getPrototypeOf(accessor) !== Function.prototype;

    // The bound functions reach 4 MB: Node 20's bind promotes about 2.9 MB of it, the lean one about 0.05 MB.
    if (nodePinsClosures) expect(promotedByDroppedBindings(false)).toBeGreaterThan(2);
    expect(promotedByDroppedBindings(true)).toBeLessThan(0.5);
  });

  it('runs the function in the async context it was bound in, with its arguments, `this` and result', async () => {
    useLeanAsyncResourceBind();
    const storage = new AsyncLocalStorage<string>();
    const bound = storage.run('at bind', () =>
      AsyncResource.bind(function (this: unknown, a: number, b: number) {
        return { store: storage.getStore(), self: this, sum: a + b };
      }),
    );
    const receiver = { name: 'receiver' };

    const result = await storage.run('at call', async () => bound.call(receiver, 2, 3));

    expect(result).toEqual({ store: 'at bind', self: receiver, sum: 5 });
    expect(bound).toHaveLength(2);
    expect(bound).not.toHaveProperty('asyncResource');
  });

  it('binds `this` when given one, and refuses what is not a function as Node does', () => {
    useLeanAsyncResourceBind();
    const receiver = { name: 'given' };
    const bound = AsyncResource.bind(function (this: unknown) {
      return this;
    }, 'typed', receiver);

    expect(bound.call({ name: 'other' })).toBe(receiver);
    expect(() => AsyncResource.bind(42 as unknown as () => void)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });
});
