// The shared rate-limit counters' figures on /metrics: how their batches to the shared store (Redis, or the cluster
// primary) fared. `given_up` counts the batches that calls stopped waiting for (CONFIRM_WAIT_MS without an answer):
// while one is given up on, a per-key rate limit can be overshot beyond the bound in docs/api-keys.md, so alert on its rate.
import type { Metrics } from '../metrics.ts';
import type { BatchedCounterStore } from './batched.ts';

export function registerCounterSyncMetrics(metrics: Metrics, store: Pick<BatchedCounterStore, 'syncs' | 'failures' | 'givenUp'>): void {
  metrics.countersByLabel('tollgate_rate_counter_syncs_total', 'Batches of rate-limit counts sent to the shared store, by result', 'result', () => ({
    sent: store.syncs,
    failed: store.failures,
    given_up: store.givenUp,
  }));
}
