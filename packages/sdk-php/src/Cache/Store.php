<?php

declare(strict_types=1);

namespace Tollgate\Cache;

/**
 * Where the client keeps cached verdicts and usage not yet sent. Values are arrays (APCu copies them in and out, so
 * no object identity is relied on). Keys are built by the client and never hold an API key in clear.
 */
interface Store
{
    public function get(string $key): ?array;

    /** `$ttl` in seconds, 0 for no expiry; entries also carry their own expiry, so the store's may be coarse. */
    public function set(string $key, array $value, float $ttl): void;

    public function delete(string $key): void;

    /**
     * Runs `$fn` so that no other request of this store runs a locked section at the same time (a read-modify-write
     * of a shared entry: a quota countdown, a list of unsent batches), and returns what it returns.
     *
     * @template T
     * @param callable(): T $fn
     * @return T
     */
    public function locked(callable $fn): mixed;
}
