import type { Store } from "../../src/store/store.js";

/**
 * `store` with every method call of its `part` (`runs`, `messages`...) going through `around`,
 * which calls on with `call` (when, how often, or not at all: the test's to say). Values that are
 * not methods pass as they are.
 */
export function aroundStore<K extends keyof Store>(
  store: Store,
  part: K,
  around: (name: string, args: unknown[], call: () => unknown) => unknown,
): Store {
  const wrapped = new Proxy(store[part] as object, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => around(String(name), args, () => value.apply(target, args));
    },
  });
  return { ...store, [part]: wrapped };
}
