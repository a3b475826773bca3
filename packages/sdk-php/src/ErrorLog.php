<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * The default onError: the first failure of each kind in this PHP process goes to error_log(), the rest stay quiet,
 * so a refused verifier token or an unreachable Tollgate shows up in the log once instead of on every request.
 * (A PHP-FPM worker serves many requests: "once" is once per worker process.)
 */
final class ErrorLog
{
    private const REFUSED_HINT = 'Tollgate refused the verifier token: create one in the admin panel under Developers → '
        . 'Verifier tokens (or with admin/staff/verifier_create) and pass it to new \\Tollgate\\Client(). Keys are refused '
        . '(reason UNAUTHORIZED) until then.';

    /** @var array<string, true> kinds already logged in this process */
    private static array $seen = [];

    /** @return callable(\Throwable, string): void */
    public static function once(?callable $write = null): callable
    {
        $write ??= static function (string $line): void {
            error_log($line);
        };
        return static function (\Throwable $error, string $what) use ($write): void {
            $refused = $error instanceof HttpError && $error->refusedToken();
            $kind = $refused ? 'refused token' : $what;
            if (isset(self::$seen[$kind])) {
                return;
            }
            self::$seen[$kind] = true;
            $write("[tollgate/sdk-php] {$what}: {$error->getMessage()}" . ($refused ? '. ' . self::REFUSED_HINT : '')
                . " (further {$kind} failures are not logged)");
        };
    }

    /** Forgets what was logged (tests). */
    public static function reset(): void
    {
        self::$seen = [];
    }
}
