import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { leanAsyncResourceBind, nodeBindAddsAccessor, useLeanAsyncResourceBind } from './async-resource-bind';

/**
 * MB promoted out of the young generation when 1,000 bound functions, each reaching 4 KB, are dropped:
 * measured in a process of its own, whose old generation nothing else changes meanwhile.
 */
function promotedByDroppedBindings(lean: boolean): number {
  const script = `
    const { AsyncResource } = require('node:async_hooks');
    const { getHeapSpaceStatistics } = require('node:v8');
    if (${lean}) AsyncResource.bind = require('./src/common/async-resource-bind').leanAsyncResourceBind;
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

  it("lets a dropped bound function's closure die young, where Node's own (20, 24) keeps it to the next full collection", () => {
    // The bound functions reach 4 MB: the lean bind promotes about 0.03 MB of it, Node 20's about 2.9 MB,
    // Node 24's about 1.5 MB; Node 26's own, without the accessor, about as little as the lean one.
    expect(promotedByDroppedBindings(true)).toBeLessThan(0.5);
    if (nodeBindAddsAccessor()) expect(promotedByDroppedBindings(false)).toBeGreaterThan(1);
    else expect(promotedByDroppedBindings(false)).toBeLessThan(0.5);
  });

  it("replaces Node's bind only where Node's own adds the accessor", () => {
    expect(useLeanAsyncResourceBind()).toBe(nodeBindAddsAccessor());
    expect(AsyncResource.bind).toBe(nodeBindAddsAccessor() ? leanAsyncResourceBind : nodeBind);
    if (/^(20|24)\./.test(process.versions.node)) expect(nodeBindAddsAccessor()).toBe(true);
  });

  it("still knows Node's own bind in a copy of the module loaded after another copy replaced it (Jest's registry per test file)", () => {
    AsyncResource.bind = leanAsyncResourceBind;
    let copy: typeof import('./async-resource-bind') | undefined;
    jest.isolateModules(() => {
      copy = require('./async-resource-bind');
    });
    expect(copy!.leanAsyncResourceBind).not.toBe(leanAsyncResourceBind);
    expect(copy!.nodeBindAddsAccessor()).toBe(nodeBindAddsAccessor());
    expect(() => copy!.leanAsyncResourceBind(42 as unknown as () => void)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });

  it('runs the function in the async context it was bound in, with its arguments, `this` and result', async () => {
    AsyncResource.bind = leanAsyncResourceBind;
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
    AsyncResource.bind = leanAsyncResourceBind;
    const receiver = { name: 'given' };
    const bound = AsyncResource.bind(function (this: unknown) {
      return this;
    }, 'typed', receiver);

    expect(bound.call({ name: 'other' })).toBe(receiver);
    expect(() => AsyncResource.bind(42 as unknown as () => void)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });
});
