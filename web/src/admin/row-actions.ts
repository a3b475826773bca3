// Actions on the rows of a table (rotate, revoke, delete…): which one is running (its button shows busy), the last
// failure, and a message saying what the last one did.
import { useState } from 'preact/hooks';
import { useAction } from '../lib/ui.ts';

export interface RowActions {
  /** The key of the action running now, or null. */
  working: string | null;
  message: string | null;
  setMessage: (message: string | null) => void;
  error: unknown;
  /** Runs `work` as the action `key`, clearing the last message first. */
  act: (key: string, work: () => Promise<void>) => void;
}

export function useRowActions(): RowActions {
  const [working, setWorking] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const action = useAction();
  return {
    working,
    message,
    setMessage,
    error: action.error,
    act(key, work) {
      setWorking(key);
      setMessage(null);
      void action.run(work).finally(() => setWorking(null));
    },
  };
}
