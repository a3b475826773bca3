<?php

declare(strict_types=1);

namespace Tollgate\Cache;

/**
 * The cache in APCu, shared by every request of a PHP-FPM pool (or of `php -S`): a verdict fetched by one request
 * answers the next ones, and usage one request could not send is sent by a later one.
 */
final class ApcuStore implements Store
{
    /** A lock holder works for microseconds; one that died is freed by the lock entry's own TTL. */
    private const LOCK_TTL_SECONDS = 1;
    private const LOCK_WAIT_SECONDS = 0.2;

    public function __construct(private readonly string $prefix = 'tollgate:')
    {
    }

    /** APCu is loaded and enabled for this SAPI (the CLI needs apc.enable_cli=1). */
    public static function available(): bool
    {
        return function_exists('apcu_enabled') && apcu_enabled();
    }

    public function get(string $key): ?array
    {
        $value = apcu_fetch($this->prefix . $key, $found);
        return $found && is_array($value) ? $value : null;
    }

    public function set(string $key, array $value, float $ttl): void
    {
        // APCu counts whole seconds; round up so an entry never leaves before its own expiry says so.
        apcu_store($this->prefix . $key, $value, $ttl > 0 ? (int) ceil($ttl) : 0);
    }

    public function delete(string $key): void
    {
        apcu_delete($this->prefix . $key);
    }

    public function locked(callable $fn): mixed
    {
        $lock = $this->prefix . 'lock';
        $deadline = microtime(true) + self::LOCK_WAIT_SECONDS;
        $held = apcu_add($lock, getmypid(), self::LOCK_TTL_SECONDS);
        while (!$held && microtime(true) < $deadline) {
            usleep(200);
            $held = apcu_add($lock, getmypid(), self::LOCK_TTL_SECONDS);
        }
        // Past the wait the section runs anyway: a stuck lock must not stop the app; the worst case is a countdown
        // step or an unsent batch lost to a concurrent write, never a request refused.
        try {
            return $fn();
        } finally {
            if ($held) {
                apcu_delete($lock);
            }
        }
    }
}
