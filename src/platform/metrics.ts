// Prometheus metrics (CONTRACT §13), served at GET /metrics when METRICS_TOKEN is set. One registry per process;
// other modules register their own metrics on `metrics.registry` (outbox depth, Stripe events…), e.g.
//   new Counter({ name: 'tollgate_outbox_failures_total', help: '…', labelNames: ['kind'], registers: [services.metrics.registry] })
// Hot-path figures (check reasons, cache hits) are plain integers kept by their owners and read at scrape time
// through `collect`, so the key check never pays for a label lookup. No label ever holds a key, token, e-mail or
// address: actions are route templates, statuses numbers, reasons the contract's fixed words.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  /** False when METRICS_TOKEN is unset: nothing is recorded per request. */
  readonly enabled: boolean;
  /** One answered request of `action` (a route template, or "-" when no route matched). */
  observeRequest(action: string, status: number, ms: number): void;
  /** Registers a gauge whose value is read at scrape time. */
  gauge(name: string, help: string, read: () => number): void;
  /** Registers a counter (by one label) whose values are read at scrape time from a plain object of totals. */
  countersByLabel(name: string, help: string, label: string, read: () => Readonly<Record<string, number>>): void;
}

export function createMetrics(enabled: boolean): Metrics {
  const registry = new Registry();
  const duration = new Histogram({
    name: 'tollgate_http_request_duration_seconds',
    help: 'Answered requests by action (route template) and HTTP status; _count is the number of requests',
    labelNames: ['action', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // labels() hashes its arguments on every call; one child per (action, status) pair, looked up by a string key.
  const children = new Map<string, { observe(value: number): void }>();

  return {
    registry,
    enabled,
    observeRequest(action, status, ms) {
      const key = `${status} ${action}`;
      let child = children.get(key);
      if (child === undefined) {
        child = duration.labels(action, String(status));
        children.set(key, child);
      }
      child.observe(ms / 1000);
    },
    gauge(name, help, read) {
      const gauge = new Gauge({
        name,
        help,
        registers: [],
        collect() {
          this.set(read());
        },
      });
      registry.registerMetric(gauge);
    },
    countersByLabel(name, help, label, read) {
      const counter = new Counter({
        name,
        help,
        labelNames: [label],
        registers: [],
        collect() {
          // A counter is only ever set forward here: the totals it mirrors never go down.
          this.reset();
          for (const [value, total] of Object.entries(read())) this.inc({ [label]: value }, total);
        },
      });
      registry.registerMetric(counter);
    },
  };
}
