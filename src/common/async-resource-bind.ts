import { AsyncResource } from 'node:async_hooks';

type Bind = typeof AsyncResource.bind;
const NODE_BIND = Symbol.for('tax-document-gateway:node-async-resource-bind');

/** Node's own bind, also when another copy of this module (Jest loads one per test file) replaced it already. */
const nodeBind: Bind = (AsyncResource.bind as Bind & { [NODE_BIND]?: Bind })[NODE_BIND] ?? AsyncResource.bind;

/**
 * AsyncResource.bind as Node 20 has it, less the deprecated `asyncResource` accessor (DEP0172) it puts
 * on every bound function. Node 20 makes that accessor with util.deprecate, which sets the prototype of
 * a new function to the accessor; V8 then keeps a map in the old generation pointing at it, so the
 * accessor, the closure it shares with the bound function and everything that reaches survive every
 * young collection until the next full one. Nest binds twice per request on each route with an
 * interceptor (the idempotent POSTs), so each such request's objects were promoted whole: at 800
 * creates/s 1.6 MB per scavenge (0.7 MB without it), scavenges of 4.2 ms (2.7 ms), and 12–15 % more of
 * the process's CPU per create. Node 24 no longer sets that prototype (nodejs/node#58218, nodejs/node#59195)
 * but its accessor still keeps about half as much alive (of 1,000 dropped bindings reaching 4 MB, the
 * spec measures 2.9 MB promoted on 20.20, 1.5 MB on 24.21, 0.03 MB with this bind); Node 26 removed the
 * accessor (nodejs/node#58618) and its own bind is as lean as this one. So this replaces Node's only
 * where bound functions still carry the accessor (Node 20 and 24), asked of Node itself, not of its
 * version number.
 */
export const leanAsyncResourceBind = function (fn: (...args: unknown[]) => unknown, type?: string, thisArg?: unknown) {
  // Node's own checks and errors for what is not a function.
  if (typeof fn !== 'function') return nodeBind.call(AsyncResource, fn, type, thisArg);
  const resource = new AsyncResource(type || fn.name || 'bound-anonymous-fn');
  const bound =
    thisArg === undefined
      ? function (this: unknown, ...args: unknown[]) {
          return resource.runInAsyncScope(fn, this, ...args);
        }
      : resource.runInAsyncScope.bind(resource, fn, thisArg);
  Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, value: fn.length, writable: false });
  return bound;
} as Bind;
Object.defineProperty(leanAsyncResourceBind, NODE_BIND, { value: nodeBind });

/** Whether Node's own bind puts the deprecated accessor on bound functions (20 and 24 do, 26 does not). */
export function nodeBindAddsAccessor(): boolean {
  // Reads the property descriptor only: the deprecated getter is never called, so no warning is printed.
  return Object.getOwnPropertyDescriptor(nodeBind(() => undefined), 'asyncResource') !== undefined;
}

/**
 * Replaces AsyncResource.bind for the whole process where Node's own adds the accessor; elsewhere
 * Node's own stays. Called before Nest handles a request. Returns whether it replaced it.
 */
export function useLeanAsyncResourceBind(): boolean {
  if (!nodeBindAddsAccessor()) return false;
  AsyncResource.bind = leanAsyncResourceBind;
  return true;
}
