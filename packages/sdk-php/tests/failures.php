<?php

declare(strict_types=1);

// A Tollgate that answers garbage, a slow one, a 502 in front of it, a refused verifier token: UNAVAILABLE under
// failOpen, or UNAUTHORIZED (never valid), each logged once.

namespace Tollgate\Tests;

use Tollgate\Client;
use Tollgate\ErrorLog;
use Tollgate\Reason;

const SOME_KEY = 'ABCDEF01-ABCDEF01-ABCDEF01-ABCDEF01';

Runner::test('a Tollgate answering garbage (200 with HTML): UNAVAILABLE, valid = failOpen, logged once', function (): void {
    World::resetLog();
    $closed = World::client([], World::fault('garbage'));
    $open = World::client(['failOpen' => true], World::fault('garbage'));
    for ($i = 0; $i < 3; $i++) {
        assertSubset(['valid' => false, 'reason' => Reason::UNAVAILABLE], $closed->check(SOME_KEY)->toArray());
        assertSubset(['valid' => true, 'reason' => Reason::UNAVAILABLE, 'config' => null], $open->check(SOME_KEY)->toArray());
    }
    assertSame(1, count(World::$logged), 'log lines: ' . json_encode(World::$logged));
    assertTrue(str_contains(World::$logged[0], 'envelope'), 'the line says what was wrong');
});

Runner::test('JSON that is not a key verdict (a valid flag of the wrong type) is garbage too', function (): void {
    foreach ([['valid' => 'yes', 'reason' => 'VALID'], ['valid' => 1, 'reason' => 'MAYBE'], 'true', ['valid' => 1, 'reason' => 'VALID', 'usage' => ['remaining' => 'lots']]] as $answer) {
        try {
            \Tollgate\ServerAnswer::toResult($answer);
            throw new AssertionFailed('accepted ' . json_encode($answer));
        } catch (\Tollgate\HttpError $error) {
            assertSame(200, $error->status);
        }
    }
});

Runner::test('a slow Tollgate: UNAVAILABLE after `timeout`, not after its 3 s', function (): void {
    $client = World::client(['timeout' => 0.3, 'failOpen' => true], World::fault('slow'));
    $started = microtime(true);
    $result = $client->check(SOME_KEY);
    $took = microtime(true) - $started;
    assertSubset(['valid' => true, 'reason' => Reason::UNAVAILABLE], $result->toArray());
    assertTrue($took >= 0.25 && $took < 1.5, "took {$took} s");
});

Runner::test('a 502 from a proxy in front of Tollgate: UNAVAILABLE, and failures are never cached', function (): void {
    $client = World::client(['negativeTtl' => 60.0], World::fault('bad-gateway'));
    assertSame(Reason::UNAVAILABLE, $client->check(SOME_KEY)->reason);
    // Still asking (and still failing): an outage answer kept in the cache would outlive the outage.
    assertSame(Reason::UNAVAILABLE, $client->check(SOME_KEY)->reason);
});

Runner::test('a refused verifier token: UNAUTHORIZED, never valid whatever failOpen says, logged once without the token', function (): void {
    World::resetLog();
    $token = 'not-a-verifier-token-5f1d';
    $client = World::client(['failOpen' => true], null, $token);
    for ($i = 0; $i < 3; $i++) {
        assertSubset(['valid' => false, 'reason' => Reason::UNAUTHORIZED], $client->check(World::key('valid')['key'])->toArray());
    }
    assertSame(1, count(World::$logged), 'log lines: ' . json_encode(World::$logged));
    assertTrue(str_contains(World::$logged[0], 'verifier token'), 'the line names the verifier token');
    assertTrue(!str_contains(World::$logged[0], $token), 'the line does not hold the token');
});

Runner::test('the default onError writes that line with error_log(), once per process', function (): void {
    ErrorLog::reset();
    $file = tempnam(sys_get_temp_dir(), 'tollgate-sdk-php-log');
    $previous = ini_set('error_log', $file);
    try {
        $client = new Client(World::env('TOLLGATE_URL'), 'not-a-verifier-token-5f1d', ['cache' => 'memory']);
        $client->check(World::key('valid')['key']);
        $client->check(World::key('valid')['key']);
        (new Client(World::env('TOLLGATE_URL'), 'another-wrong-token', ['cache' => 'memory']))->check(World::key('valid')['key']);
        $lines = array_values(array_filter(explode("\n", (string) file_get_contents($file))));
        assertSame(1, count($lines), 'lines: ' . json_encode($lines));
        assertTrue(str_contains($lines[0], '[tollgate/sdk-php] verifier token refused: Tollgate answered HTTP 401'), $lines[0]);
    } finally {
        ini_set('error_log', (string) $previous);
        unlink($file);
    }
});

Runner::test('bad options are refused at construction, not at the first check', function (): void {
    foreach ([['ftp://x', 't', []], ['http://x', '', []], ['http://x', 't', ['cacheTTL' => 1]], ['http://x', 't', ['cache' => 'disk']]] as [$url, $token, $options]) {
        try {
            new Client($url, $token, $options);
            throw new AssertionFailed('accepted ' . json_encode([$url, $token, $options]));
        } catch (\InvalidArgumentException) {
        }
    }
});
