// A tiny observable value shared by the pages (the logged-in account, the cart badge).
import { useEffect, useState } from 'preact/hooks';

export interface Store<T> {
  get(): T;
  set(value: T): void;
  subscribe(listener: () => void): () => void;
}

export function createStore<T>(initial: T): Store<T> {
  let value = initial;
  const listeners = new Set<() => void>();
  return {
    get: () => value,
    set(next) {
      value = next;
      for (const listener of listeners) listener();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export function useStore<T>(store: Store<T>): T {
  const [, setTick] = useState(0);
  const value = store.get();
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setTick((tick) => tick + 1));
    // The value may have changed between this render and the subscription (effects run after paint): catch up.
    if (store.get() !== value) setTick((tick) => tick + 1);
    return () => {
      unsubscribe();
    };
  }, [store]);
  return value;
}
