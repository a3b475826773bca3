<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * What every framework adapter shares: reading the key from a request's headers, and the plain-PHP guard for a
 * script with no framework (`Guard::protect($client)`, or the function `Tollgate\guard($client)`).
 */
final class Guard
{
    /**
     * The key from `X-API-Key`, else from `Authorization: Bearer <key>`; null when neither carries a non-empty key.
     *
     * @param callable(string): (string|null) $header a header's value by lower-case name, null when absent
     */
    public static function readKey(callable $header): ?string
    {
        $direct = trim((string) $header('x-api-key'));
        if ($direct !== '') {
            return $direct;
        }
        $authorization = (string) $header('authorization');
        return preg_match('/^bearer\s+(\S+)\s*$/i', $authorization, $match) === 1 ? $match[1] : null;
    }

    /** A header of the current request from `$_SERVER` (or the array given), by lower-case name. */
    public static function serverHeader(array $server, string $name): ?string
    {
        $variable = 'HTTP_' . strtoupper(str_replace('-', '_', $name));
        $value = $server[$variable] ?? null;
        // Apache behind CGI/FastCGI hands Authorization on only after a rewrite, under this name.
        if ($value === null && $name === 'authorization') {
            $value = $server['REDIRECT_HTTP_AUTHORIZATION'] ?? null;
        }
        return is_string($value) ? $value : null;
    }

    /**
     * Checks the current request's key. Returns the verdict when the request may go on; otherwise answers it (the
     * status, Retry-After, the JSON body) and ends the script, as the Node middleware would not call `next()`.
     * `$ip` is the end user's address; by default REMOTE_ADDR (pass the right one when behind a proxy).
     */
    public static function protect(Client $client, ?array $server = null, ?string $ip = null): CheckResult
    {
        [$result, $refusal] = self::judge($client, $server ?? $_SERVER, $ip);
        if ($refusal === null) {
            return $result;
        }
        self::send($refusal);
        exit;
    }

    /**
     * The verdict and the refusal (null to let the request through) without answering anything: for apps that
     * write their responses themselves. The result is null when the request carries no key.
     *
     * @return array{0: CheckResult|null, 1: Refusal|null}
     */
    public static function judge(Client $client, array $server, ?string $ip = null): array
    {
        $key = self::readKey(static fn (string $name): ?string => self::serverHeader($server, $name));
        $ip ??= is_string($server['REMOTE_ADDR'] ?? null) ? $server['REMOTE_ADDR'] : null;
        $result = $key === null ? null : $client->check($key, $ip);
        return [$result, Refusal::of($result)];
    }

    /** Writes the refusal as this request's answer with header() and echo. */
    public static function send(Refusal $refusal): void
    {
        if (!headers_sent()) {
            http_response_code($refusal->status);
            foreach ($refusal->headers() as $name => $value) {
                header("{$name}: {$value}");
            }
        }
        echo $refusal->json();
    }
}
