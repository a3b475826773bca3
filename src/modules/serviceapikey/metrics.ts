// The API key product's figures on /metrics: check answers by reason, the key cache, the usage flush.
import type { Metrics } from '../../platform/metrics.ts';
import type { ApiKeyService } from './service.ts';

export function registerApiKeyMetrics(metrics: Metrics, apikeys: Pick<ApiKeyService, 'stats'>): void {
  metrics.countersByLabel('tollgate_apikey_checks_total', 'Key checks and get_info calls answered, by reason', 'reason', () => apikeys.stats().reasons);
  metrics.gauge('tollgate_apikey_cache_size', 'Key records held in the in-process key cache', () => apikeys.stats().cacheSize);
  metrics.gauge('tollgate_apikey_cache_hit_ratio', 'Share of key lookups answered by the cache since start (0 before the first)', () => {
    const { cacheHits, cacheMisses } = apikeys.stats();
    return cacheHits + cacheMisses === 0 ? 0 : cacheHits / (cacheHits + cacheMisses);
  });
  metrics.countersByLabel('tollgate_apikey_cache_lookups_total', 'Key-cache lookups by result', 'result', () => {
    const { cacheHits, cacheMisses } = apikeys.stats();
    return { hit: cacheHits, miss: cacheMisses };
  });
  metrics.gauge('tollgate_usage_flush_lag_seconds', 'Seconds since every usage count of this process was last in the database', () => apikeys.stats().flushLagMs / 1000);
}
