<?php

declare(strict_types=1);

namespace Tollgate;

use Tollgate\Cache\ApcuStore;
use Tollgate\Cache\MemoryStore;
use Tollgate\Cache\Store;

/**
 * Verifies Tollgate API keys from a PHP app, as the Node SDK does where PHP's model allows (CONTRACT §11):
 *
 * - check() answers from a cache: APCu when it is enabled (shared by the requests of a PHP-FPM pool), else memory
 *   that lives as long as this object. PHP workers live per request and cannot hold the events stream open, so
 *   revocation is not pushed: a cached answer lives `cacheTtl` seconds (1 by default, the delay the Node SDK allows
 *   itself while its stream is down), and any change to a key is seen within that.
 * - The first check of a key is counted by Tollgate itself; each answer from the cache is a use counted here and
 *   reported with report_usage under a generated batch id; `usage.remaining` is counted down locally, and at zero
 *   Tollgate is asked again, so a hard limit holds.
 * - track() queues metered events for admin/usage/ingest with ids generated here.
 * - Usage is sent at flush(), when the client is destroyed, and at the end of the request (after the response under
 *   PHP-FPM); a failed send is retried with the same ids, so Tollgate counts it once.
 * - Tollgate down, slow (`timeout`), answering 5xx or garbage: reason UNAVAILABLE, `valid` = `failOpen`. A refused
 *   verifier token: reason UNAUTHORIZED, never valid, logged once.
 */
final class Client
{
    private const MAX_KEY_LENGTH = 256;
    private const DEFAULTS = [
        'cacheTtl' => 1.0,
        'negativeTtl' => 1.0,
        'timeout' => 2.0,
        'failOpen' => false,
        'cache' => 'auto',
        'onError' => null,
        'finishRequest' => true,
    ];

    private readonly Transport $transport;
    private readonly Store $store;
    private readonly UsageOutbox $outbox;
    /** Cache entries of different Tollgates or tokens never meet in a shared APCu. */
    private readonly string $namespace;
    private readonly float $cacheTtl;
    private readonly float $negativeTtl;
    private readonly bool $failOpen;
    private readonly bool $finishRequest;
    /** @var callable(\Throwable, string): void */
    private $onError;

    /**
     * @param string $baseUrl where Tollgate answers, e.g. https://billing.example.com
     * @param string $verifierToken the API token of a verifier (Developers → Verifier tokens)
     * @param array{cacheTtl?: float, negativeTtl?: float, timeout?: float, failOpen?: bool,
     *              cache?: 'auto'|'apcu'|'memory'|Store, onError?: callable(\Throwable, string): void,
     *              finishRequest?: bool} $options
     */
    public function __construct(string $baseUrl, string $verifierToken, array $options = [])
    {
        if (preg_match('#^https?://#i', $baseUrl) !== 1) {
            throw new \InvalidArgumentException('baseUrl must be an http(s) URL');
        }
        if ($verifierToken === '') {
            throw new \InvalidArgumentException('verifierToken is required');
        }
        $unknown = array_diff(array_keys($options), array_keys(self::DEFAULTS));
        if ($unknown !== []) {
            throw new \InvalidArgumentException('unknown option(s): ' . implode(', ', $unknown));
        }
        $options += self::DEFAULTS;
        $baseUrl = rtrim($baseUrl, '/');
        $this->cacheTtl = (float) $options['cacheTtl'];
        $this->negativeTtl = (float) $options['negativeTtl'];
        $this->failOpen = (bool) $options['failOpen'];
        $this->finishRequest = (bool) $options['finishRequest'];
        $this->onError = $options['onError'] ?? ErrorLog::once();
        $this->transport = new Transport($baseUrl, $verifierToken, (float) $options['timeout']);
        $this->store = self::storeFor($options['cache']);
        $this->namespace = substr(hash('sha256', "{$baseUrl}\0{$verifierToken}"), 0, 16);
        $this->outbox = new UsageOutbox($this->store, $this->namespace, $this->onError);
        $this->flushAtShutdown();
    }

    /** The verdict on `$key`, from the cache when it can; `$ip` is the end user's address (bad keys count against it). */
    public function check(string $key, ?string $ip = null): CheckResult
    {
        if (!self::plausibleKey($key)) {
            return CheckResult::notFound();
        }
        $cacheKey = $this->cacheKey($key);
        $entry = $this->store->get($cacheKey);
        if ($entry !== null && $entry['expiresAt'] > microtime(true)) {
            $result = CheckResult::fromArray($entry['result']);
            if (!$result->valid) {
                return $result;
            }
            if (($result->usage['remaining'] ?? null) === null || $entry['pastLimitOk']) {
                $this->outbox->countUse((int) $result->keyId);
                return $result;
            }
            $counted = $this->countDown($cacheKey);
            if ($counted !== null) {
                $this->outbox->countUse((int) $counted->keyId);
                return $counted;
            }
            // The local countdown reached zero: report what was counted, then let Tollgate judge.
            $this->flush();
        }
        return $this->fetch($key, $ip);
    }

    /** The verdict on `$key` from Tollgate itself (never the cache; the answer then refreshes the cache). */
    public function getInfo(string $key, ?string $ip = null): CheckResult
    {
        return self::plausibleKey($key) ? $this->fetch($key, $ip) : CheckResult::notFound();
    }

    /**
     * A single-use link to a client's customer portal (`admin/portal/session_create`, Tollgate issue 25): an array with
     * Tollgate's field names — id, url, client_id, scopes, return_url, expires_at. `$scopes` among keys, usage,
     * invoices and wallet (all when null); `expiresIn` in seconds (60–86400, 900 by default). Frame the url on an
     * origin listed in Tollgate's portal_frame_ancestors setting, or redirect to it. The token needs the `portal`
     * scope; a refusal throws HttpError with Tollgate's message.
     *
     * @param list<string>|null $scopes
     * @param array{returnUrl?: string, expiresIn?: int} $options
     * @return array<string, mixed>
     */
    public function portalSession(int $clientId, ?array $scopes = null, array $options = []): array
    {
        if ($clientId < 1) {
            throw new \InvalidArgumentException('clientId must be a positive integer');
        }
        $params = ['client_id' => $clientId];
        if ($scopes !== null) {
            $params['scopes'] = array_values($scopes);
        }
        if (isset($options['returnUrl'])) {
            $params['return_url'] = $options['returnUrl'];
        }
        if (isset($options['expiresIn'])) {
            $params['expires_in'] = $options['expiresIn'];
        }
        return $this->transport->call('portal/session_create', $params);
    }

    /**
     * Queues a metered event for `admin/usage/ingest` and returns its id. `$value` is the amount (tokens, bytes…) for
     * sum, max and latest meters, null for count meters; `$properties` an associative array. Sent at flush().
     *
     * @param array<string, mixed>|null $properties
     */
    public function track(string $key, string $meter, int|float|null $value = null, ?array $properties = null): string
    {
        if ($meter === '' || strlen($meter) > 40) {
            throw new \InvalidArgumentException('meter must be the code of a meter on the plan (1–40 characters)');
        }
        // Whole numbers only, as Tollgate takes them (tokens, bytes, milliseconds: sums exact in any order). A float
        // holding a whole number (3.0) is sent as the integer it is; 0.5 is refused here, not per event at flush().
        if ($value !== null && (!is_finite((float) $value) || $value < 0 || floor((float) $value) !== (float) $value || $value > 9007199254740991)) {
            throw new \InvalidArgumentException('value must be a whole number ≥ 0 (below 2^53), or null for a count meter');
        }
        if (is_float($value)) {
            $value = (int) $value;
        }
        if ($properties !== null && $properties !== [] && array_is_list($properties)) {
            throw new \InvalidArgumentException('properties must be an associative array (a JSON object)');
        }
        $id = UsageOutbox::newId();
        $event = [
            'id' => $id,
            'key' => $key,
            'meter' => $meter,
            // When it happened, not when it is sent: a retry a request later still lands in the right period.
            'timestamp' => gmdate('Y-m-d\TH:i:s') . sprintf('.%03dZ', (int) (fmod(microtime(true), 1) * 1000)),
        ];
        if ($value !== null) {
            $event['value'] = $value;
        }
        if ($properties !== null) {
            $event['properties'] = (object) $properties;
        }
        // Refused now, to the caller, rather than failing a whole batch at flush() (invalid UTF-8, a resource…).
        try {
            json_encode($event, JSON_THROW_ON_ERROR);
        } catch (\JsonException $error) {
            throw new \InvalidArgumentException("the event cannot be sent as JSON: {$error->getMessage()}", 0, $error);
        }
        $this->outbox->addEvent($event);
        return $id;
    }

    /** Sends the queued usage now (tracked events, uses answered from the cache, and what earlier sends left). */
    public function flush(): void
    {
        try {
            $this->outbox->flush($this->transport);
        } catch (\Throwable $error) {
            // flush runs from destructors and shutdown, where an exception would be a fatal error in the app.
            ($this->onError)($error, 'usage flush');
        }
    }

    /** Usage still waiting to be sent: `['reports' => [...], 'events' => [...]]`. */
    public function unsent(): array
    {
        return $this->outbox->unsent();
    }

    public function __destruct()
    {
        if ($this->outbox->hasWork()) {
            $this->flush();
        }
    }

    // ---- cache ------------------------------------------------------------------------------------------------

    private static function storeFor(mixed $cache): Store
    {
        if ($cache instanceof Store) {
            return $cache;
        }
        return match ($cache) {
            'auto' => ApcuStore::available() ? new ApcuStore() : new MemoryStore(),
            'apcu' => ApcuStore::available() ? new ApcuStore() : throw new \InvalidArgumentException('cache "apcu": APCu is not enabled (the CLI needs apc.enable_cli=1)'),
            'memory' => new MemoryStore(),
            default => throw new \InvalidArgumentException('cache must be "auto", "apcu", "memory" or a Tollgate\\Cache\\Store'),
        };
    }

    /** The store's key for an API key: a hash, so the key itself never sits in shared memory under its own name. */
    private function cacheKey(string $key): string
    {
        return "{$this->namespace}:key:" . hash('sha256', $key);
    }

    /** One use off the cached `remaining` (shared between requests with APCu, hence the lock); null at zero. */
    private function countDown(string $cacheKey): ?CheckResult
    {
        return $this->store->locked(function () use ($cacheKey): ?CheckResult {
            $entry = $this->store->get($cacheKey);
            $left = $entry === null ? 0.0 : $entry['expiresAt'] - microtime(true);
            if ($entry === null || $left <= 0 || ($entry['result']['usage']['remaining'] ?? 0) <= 0) {
                $this->store->delete($cacheKey);
                return null;
            }
            $entry['result']['usage']['remaining']--;
            $entry['result']['usage']['used']++;
            $this->store->set($cacheKey, $entry, $left);
            return CheckResult::fromArray($entry['result']);
        });
    }

    private function remember(string $key, CheckResult $result, float $fetchedAt): void
    {
        $ttl = $result->valid ? $this->cacheTtl : $this->negativeTtl;
        if ($ttl <= 0) {
            return;
        }
        $usage = $result->usage;
        // Valid with more uses than the limit: the plan does not enforce its limit, so nothing to count down.
        $pastLimitOk = $result->valid && $usage !== null && ($usage['limit'] ?? null) !== null && ($usage['used'] ?? 0) > $usage['limit'];
        $expiresAt = $fetchedAt + $ttl;
        $this->store->set($this->cacheKey($key), ['result' => $result->toArray(), 'expiresAt' => $expiresAt, 'pastLimitOk' => $pastLimitOk], $ttl);
    }

    // ---- asking Tollgate --------------------------------------------------------------------------------------

    private function fetch(string $key, ?string $ip): CheckResult
    {
        $startedAt = microtime(true);
        $params = ['key' => $key];
        // Tollgate takes plain IPv4/IPv6 text; anything else (a zone id, a host name) is left out rather than refused.
        if ($ip !== null && preg_match('/^[0-9A-Fa-f.:]{2,45}$/', $ip) === 1) {
            $params['ip'] = $ip;
        }
        try {
            $result = ServerAnswer::toResult($this->transport->call('serviceapikey/get_info', $params));
        } catch (HttpError $error) {
            if ($error->status === 429) {
                // This end user's address is over its failed-lookup budget (or this verifier over its own limit).
                return new CheckResult(false, Reason::RATE_LIMITED, retryAfter: $error->retryAfter ?? 1);
            }
            if ($error->refusedToken()) {
                // Retrying cannot help and failing open would open the API to anyone until someone notices.
                ($this->onError)($error, 'verifier token refused');
                return new CheckResult(false, Reason::UNAUTHORIZED);
            }
            ($this->onError)($error, 'check');
            return new CheckResult($this->failOpen, Reason::UNAVAILABLE);
        }
        if ($result->reason !== Reason::RATE_LIMITED) {
            $this->remember($key, $result, $startedAt);
        }
        return $result;
    }

    /**
     * Keys are printable ASCII without spaces (Tollgate's are hex and dashes; imported ones may be wider): anything
     * else cannot be a key, and is refused here without a request (no odd bytes reach a URL, a header or a log).
     */
    private static function plausibleKey(string $key): bool
    {
        return $key !== '' && strlen($key) <= self::MAX_KEY_LENGTH && preg_match('/^[\x21-\x7E]+$/', $key) === 1;
    }

    /**
     * Sends the request's usage when it ends: registered from inside a shutdown function, so it runs after the
     * app's own shutdown functions (which may still track()). Under PHP-FPM the response is finished first, so
     * the visitor never waits for these calls. A weak reference: the shutdown list does not keep the client alive.
     */
    private function flushAtShutdown(): void
    {
        $client = \WeakReference::create($this);
        register_shutdown_function(static function () use ($client): void {
            register_shutdown_function(static function () use ($client): void {
                $client->get()?->flushAtEnd();
            });
        });
    }

    private function flushAtEnd(): void
    {
        // Another request's (APCu) or an earlier flush's leftovers are retried too.
        $leftovers = $this->outbox->unsent() !== ['reports' => [], 'events' => []];
        if (!$this->outbox->hasWork() && !$leftovers) {
            return;
        }
        if ($this->finishRequest && function_exists('fastcgi_finish_request')) {
            fastcgi_finish_request();
        }
        $this->flush();
    }
}
