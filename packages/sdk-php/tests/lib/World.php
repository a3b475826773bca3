<?php

declare(strict_types=1);

namespace Tollgate\Tests;

use Tollgate\Client;
use Tollgate\ErrorLog;

/**
 * What the Vitest file hands the PHP tests (URLs, tokens, keys, in environment variables) and the few calls they make
 * around the SDK: the admin API (usage totals), the fault server's log, the guarded php -S app.
 */
final class World
{
    /** @var list<string> lines the SDK logged through the capturing onError */
    public static array $logged = [];

    public static function env(string $name): string
    {
        $value = getenv($name);
        if ($value === false || $value === '') {
            throw new \RuntimeException("{$name} is not set: run these tests through test/processes/sdk-php.test.ts");
        }
        return $value;
    }

    /** @return array{key: string, orderId: int} one of valid, disabled, limited, rated */
    public static function key(string $which): array
    {
        return json_decode(self::env('KEYS'), true, 512, JSON_THROW_ON_ERROR)[$which];
    }

    /** The limited key (enforce_limit, monthlyLimit 3), its quota used up first if check.php has not done it. */
    public static function usedUpKey(): string
    {
        $key = self::key('limited')['key'];
        $client = self::client(['cacheTtl' => 0.0]);
        for ($i = 0; $i < 4 && $client->check($key)->reason === \Tollgate\Reason::VALID; $i++) {
        }
        return $key;
    }

    /** A client of the real Tollgate (or of `$url`), logging into World::$logged rather than error_log. */
    public static function client(array $options = [], ?string $url = null, ?string $token = null): Client
    {
        $options += ['cache' => 'memory', 'onError' => ErrorLog::once(static function (string $line): void {
            self::$logged[] = $line;
        })];
        return new Client($url ?? self::env('TOLLGATE_URL'), $token ?? self::env('TOLLGATE_VERIFIER_TOKEN'), $options);
    }

    /** A fresh log: ErrorLog's "once" is per process, so each test that counts lines starts from nothing. */
    public static function resetLog(): void
    {
        ErrorLog::reset();
        self::$logged = [];
    }

    public static function fault(string $path): string
    {
        return self::env('FAULT_URL') . "/{$path}";
    }

    /** @return list<array{path: string, body: mixed, status: int, answer: mixed, lost: bool}> */
    public static function faultLog(string $label): array
    {
        return json_decode(self::http('GET', self::fault("log/{$label}"))['body'], true, 512, JSON_THROW_ON_ERROR);
    }

    /** The calls to one action in a fault-server log. */
    public static function callsTo(string $label, string $action): array
    {
        return array_values(array_filter(self::faultLog($label), static fn (array $call): bool => str_ends_with($call['path'], $action)));
    }

    public static function admin(string $path, array $params = []): mixed
    {
        $reply = self::http('POST', self::env('TOLLGATE_URL') . "/api/admin/{$path}", [
            'Authorization: Basic ' . base64_encode('admin:' . self::env('TOLLGATE_ADMIN_TOKEN')),
            'Content-Type: application/json',
        ], json_encode($params));
        $body = json_decode($reply['body'], true);
        if ($reply['status'] !== 200) {
            throw new \RuntimeException("admin/{$path} answered {$reply['status']}: {$reply['body']}");
        }
        return $body['result'];
    }

    public static function usageTotal(int $orderId): int
    {
        return self::admin('serviceapikey/usage', ['order_id' => $orderId])['total'];
    }

    /** Sends the event ids again straight to Tollgate: how many it already held (a duplicate is a stored event). */
    public static function alreadyStored(string $key, array $events): int
    {
        $result = self::admin('usage/ingest', ['events' => array_map(static fn (array $e): array => [
            'id' => $e['id'], 'key' => $key, 'meter' => 'tokens', 'value' => $e['value'],
        ], $events)]);
        return $result['duplicates'];
    }

    /** Notes a tracked event for the Vitest file, which checks the database holds it exactly once. */
    public static function recordTracked(string $id, int|float $value): void
    {
        file_put_contents(self::env('EVENTS_FILE'), json_encode(['id' => $id, 'value' => $value]) . "\n", FILE_APPEND | LOCK_EX);
    }

    /** @return array{status: int, headers: array<string, string>, body: string} */
    public static function http(string $method, string $url, array $headers = [], ?string $body = null): array
    {
        $curl = curl_init($url);
        $received = [];
        curl_setopt_array($curl, [
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_HTTPHEADER => $headers,
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_TIMEOUT => 15,
            CURLOPT_HEADERFUNCTION => static function ($handle, string $line) use (&$received): int {
                $parts = explode(':', $line, 2);
                if (count($parts) === 2) {
                    $received[strtolower(trim($parts[0]))] = trim($parts[1]);
                }
                return strlen($line);
            },
        ]);
        if ($body !== null) {
            curl_setopt($curl, CURLOPT_POSTFIELDS, $body);
        }
        $answer = curl_exec($curl);
        if ($answer === false) {
            throw new \RuntimeException("{$method} {$url}: " . curl_error($curl));
        }
        return ['status' => (int) curl_getinfo($curl, CURLINFO_RESPONSE_CODE), 'headers' => $received, 'body' => (string) $answer];
    }

    /** A request to the guarded php -S app. */
    public static function app(string $path, array $headers = []): array
    {
        $reply = self::http('GET', self::env('APP_URL') . $path, $headers);
        $reply['json'] = json_decode($reply['body'], true);
        return $reply;
    }
}
