<?php

declare(strict_types=1);

namespace Tollgate\Cache;

/**
 * The cache without APCu: an array in the client, so it lives as long as the client does (one request under PHP-FPM
 * or mod_php; the worker's life under a long-running server such as RoadRunner or a queue worker).
 */
final class MemoryStore implements Store
{
    /** @var array<string, array{0: array, 1: float}> key → [value, expires at (microtime), 0 = never] */
    private array $entries = [];

    public function get(string $key): ?array
    {
        $entry = $this->entries[$key] ?? null;
        if ($entry === null) {
            return null;
        }
        if ($entry[1] !== 0.0 && $entry[1] <= microtime(true)) {
            unset($this->entries[$key]);
            return null;
        }
        return $entry[0];
    }

    public function set(string $key, array $value, float $ttl): void
    {
        $this->entries[$key] = [$value, $ttl > 0 ? microtime(true) + $ttl : 0.0];
    }

    public function delete(string $key): void
    {
        unset($this->entries[$key]);
    }

    public function locked(callable $fn): mixed
    {
        // One request, one thread: nothing else can run in between.
        return $fn();
    }
}
