// A background task repeated on a timer that does not keep the process alive, never two runs at once, and awaited at
// shutdown. The scheduler and the worker that applies stored provider events both run this way.

export interface PeriodicTask {
  run: () => Promise<unknown>;
  /** Registers the shutdown step (stop the timer, wait for a run in progress). */
  onClose: (task: () => Promise<void>) => void;
  /** A failed run is reported here; the next tick runs again. */
  onError: (error: unknown) => void;
  intervalMs: number;
  /** Also run once at once, not only after the first interval. */
  runAtStart?: boolean;
}

/** Returns the starter to push into `services.startTasks`. */
export function periodicTask({ run, onClose, onError, intervalMs, runAtStart = false }: PeriodicTask): () => void {
  return () => {
    let running: Promise<unknown> | null = null;
    const tick = (): void => {
      if (running !== null) return;
      running = run()
        .catch(onError)
        .finally(() => {
          running = null;
        });
    };
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    if (runAtStart) tick();
    onClose(async () => {
      clearInterval(timer);
      if (running !== null) await running;
    });
  };
}
