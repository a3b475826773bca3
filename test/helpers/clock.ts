// A frozen clock for tests that drive periods through `now`: Date only (timers keep running), set to an ISO moment.
// Each test file restores real timers after each test (vi.useRealTimers()).
import { vi } from 'vitest';

/** Freezes Date at `iso` and returns that moment. */
export function at(iso: string): Date {
  const ms = Date.parse(iso);
  vi.useFakeTimers({ toFake: ['Date'], now: ms });
  vi.setSystemTime(ms);
  return new Date(ms);
}
