<?php

declare(strict_types=1);

// check() and getInfo() against the real Tollgate: every reason a key can get, and keys that cannot be keys.

namespace Tollgate\Tests;

use Tollgate\CheckResult;
use Tollgate\Reason;

Runner::test('a valid key: valid, VALID, its order, key id, config and usage', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('valid');
    foreach (['memory', 'apcu'] as $cache) {
        $result = World::client(['cache' => $cache])->check($key);
        assertTrue($result instanceof CheckResult, 'a CheckResult');
        assertSubset(['valid' => true, 'reason' => Reason::VALID, 'orderId' => $orderId, 'config' => ['tier' => 'pro'], 'retryAfter' => null], $result->toArray(), $cache);
        assertTrue(is_int($result->keyId), 'a key id');
        assertTrue(is_int($result->usage['used']) && array_key_exists('remaining', $result->usage), 'usage figures');
    }
});

Runner::test('an unknown key: NOT_FOUND, no ids', function (): void {
    $result = World::client()->check('FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF');
    assertSubset(['valid' => false, 'reason' => Reason::NOT_FOUND, 'orderId' => null, 'keyId' => null, 'config' => null], $result->toArray());
});

Runner::test('a disabled key: DISABLED, never valid', function (): void {
    $client = World::client();
    $result = $client->check(World::key('disabled')['key']);
    assertSubset(['valid' => false, 'reason' => Reason::DISABLED], $result->toArray());
    // Refusals are cached too, and stay refusals.
    assertSame(Reason::DISABLED, $client->check(World::key('disabled')['key'])->reason);
});

Runner::test('a key over its enforced limit: LIMIT_EXCEEDED with Retry-After to the end of the period, uses counted exactly', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('limited');
    $client = World::client(['cacheTtl' => 60.0]);
    $answers = [];
    for ($i = 0; $i < 5; $i++) {
        $answers[] = $client->check($key);
    }
    // monthlyLimit 3: the first from Tollgate, two counted down from the cache, then Tollgate refuses.
    assertSame([true, true, true, false, false], array_map(static fn (CheckResult $r): bool => $r->valid, $answers));
    assertSame([2, 1, 0], array_map(static fn (CheckResult $r): int => $r->usage['remaining'], array_slice($answers, 0, 3)), 'remaining');
    assertSame(Reason::LIMIT_EXCEEDED, $answers[3]->reason);
    assertTrue($answers[3]->retryAfter >= 1 && $answers[3]->retryAfter <= 32 * 86400, 'retryAfter until the period ends');
    $client->flush();
    assertSame(3, World::usageTotal($orderId), 'uses of the limited key');
});

Runner::test("a key over its plan's rate limit: RATE_LIMITED with retryAfter, never cached", function (): void {
    $key = World::key('rated')['key'];
    $client = World::client(['cacheTtl' => 0.0]);
    assertSame(Reason::VALID, $client->check($key)->reason, 'the first use of the window');
    $limited = $client->check($key);
    assertSubset(['valid' => false, 'reason' => Reason::RATE_LIMITED], $limited->toArray());
    assertTrue($limited->retryAfter >= 1, 'retryAfter');
});

Runner::test('Tollgate answering 429 (an address over its failed-lookup budget): RATE_LIMITED with its Retry-After', function (): void {
    $result = World::client([], World::fault('too-many'))->check('FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF');
    assertSubset(['valid' => false, 'reason' => Reason::RATE_LIMITED, 'retryAfter' => 7], $result->toArray());
});

Runner::test('keys with characters outside the alphabet, empty or too long: NOT_FOUND without asking Tollgate', function (): void {
    // Pointed at a garbage answerer: any request would come back UNAVAILABLE, so NOT_FOUND proves none was made.
    $client = World::client(['failOpen' => true], World::fault('garbage'));
    foreach (['', 'ABCD EFGH', "ABCD\nEFGH", "ABCD\0EFGH", 'ÄBCD-EFGH', "ABCD\u{202E}EFGH", str_repeat('A', 257)] as $bad) {
        assertSame(Reason::NOT_FOUND, $client->check($bad)->reason, json_encode($bad));
        assertSame(Reason::NOT_FOUND, $client->getInfo($bad)->reason, json_encode($bad));
    }
    assertSame([], World::$logged, 'nothing logged');
    // The same keys against the real Tollgate: NOT_FOUND too, whether or not the SDK filters them.
    assertSame(Reason::NOT_FOUND, World::client()->check('ÄBCD-EFGH')->reason);
});

Runner::test("the end user's address goes to Tollgate when it is an IP address, and is left out when not", function (): void {
    $key = World::key('valid')['key'];
    World::client([], World::fault('via/ip'))->check($key, '203.0.113.9');
    World::client([], World::fault('via/ip'))->check($key, 'fe80::1%eth0');
    $calls = World::callsTo('ip', 'get_info');
    assertSame('203.0.113.9', $calls[0]['body']['ip'] ?? null, 'first address');
    assertTrue(!isset($calls[1]['body']['ip']), 'a zone id is left out');
    assertSame(200, $calls[1]['status'], 'and the check goes on');
});
