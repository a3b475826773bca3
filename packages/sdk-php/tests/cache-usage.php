<?php

declare(strict_types=1);

// The cache (per request, and APCu shared between requests) and the uses it answers: reported with report_usage in
// batches, retried with the same batch id, counted by Tollgate exactly once.

namespace Tollgate\Tests;

use Tollgate\Reason;

Runner::test('per-request memory: ten checks make one get_info; the nine cached uses go in one report_usage', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('valid');
    $before = World::usageTotal($orderId);
    $client = World::client(['cacheTtl' => 30.0], World::fault('via/memory'));
    for ($i = 0; $i < 10; $i++) {
        assertSame(Reason::VALID, $client->check($key)->reason);
    }
    assertSame(1, count(World::callsTo('memory', 'get_info')), 'get_info calls');
    $client->flush();
    $reports = World::callsTo('memory', 'report_usage');
    assertSame(1, count($reports), 'report_usage calls');
    assertSame(9, $reports[0]['body']['usage'][0]['count'], 'uses reported');
    assertSame(1, preg_match('/^[0-9a-f]{32}$/', $reports[0]['body']['batch_id']), 'a generated batch id');
    assertSame($before + 10, World::usageTotal($orderId), 'every use counted once');
    // Nothing left: a second flush sends nothing.
    $client->flush();
    assertSame(1, count(World::callsTo('memory', 'report_usage')), 'report_usage calls after a second flush');
});

Runner::test('APCu: a verdict fetched by one request answers the next one (two clients), each use counted once', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('valid');
    apcu_clear_cache();
    $before = World::usageTotal($orderId);
    $first = World::client(['cache' => 'apcu', 'cacheTtl' => 30.0], World::fault('via/apcu'));
    assertSame(Reason::VALID, $first->check($key)->reason);
    $first->flush();
    $second = World::client(['cache' => 'apcu', 'cacheTtl' => 30.0], World::fault('via/apcu'));
    assertSame(Reason::VALID, $second->check($key)->reason);
    assertSame(Reason::VALID, $second->check($key)->reason);
    unset($second); // the end of that "request": its uses are sent as it is destroyed
    assertSame(1, count(World::callsTo('apcu', 'get_info')), 'get_info calls');
    assertSame($before + 3, World::usageTotal($orderId), 'uses');
    // The cache holds hashes of keys, never a key under its own name.
    $names = array_column(apcu_cache_info()['cache_list'], 'info');
    assertSame([], array_filter($names, static fn (string $name): bool => str_contains($name, $key)), 'APCu entry names');
});

Runner::test('APCu: the quota countdown is shared by the requests, so together they pass exactly the limit', function (): void {
    apcu_clear_cache();
    ['key' => $key, 'orderId' => $orderId] = World::key('shared-limit'); // enforce_limit, monthlyLimit 4
    $verdicts = [];
    // Six "requests" one after the other, each with its own client (as PHP-FPM would), sharing APCu.
    for ($request = 0; $request < 6; $request++) {
        $client = World::client(['cache' => 'apcu', 'cacheTtl' => 30.0]);
        $verdicts[] = $client->check($key)->reason;
        unset($client);
    }
    assertSame([Reason::VALID, Reason::VALID, Reason::VALID, Reason::VALID, Reason::LIMIT_EXCEEDED, Reason::LIMIT_EXCEEDED], $verdicts);
    assertSame(4, World::usageTotal($orderId), 'uses');
});

Runner::test('a cached answer lives cacheTtl seconds, then Tollgate is asked again (the documented revocation delay)', function (): void {
    $key = World::key('valid')['key'];
    $client = World::client(['cacheTtl' => 0.3], World::fault('via/ttl'));
    $client->check($key);
    $client->check($key);
    assertSame(1, count(World::callsTo('ttl', 'get_info')), 'within the TTL');
    usleep(350_000);
    $client->check($key);
    assertSame(2, count(World::callsTo('ttl', 'get_info')), 'after the TTL');
    $client->flush();
});

Runner::test('a key disabled while cached is refused once its cached answer expires', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('valid');
    $client = World::client(['cacheTtl' => 0.5]);
    assertSame(Reason::VALID, $client->check($key)->reason);
    World::admin('serviceapikey/update', ['order_id' => $orderId, 'valid' => false]);
    try {
        usleep(550_000);
        assertSame(Reason::DISABLED, $client->check($key)->reason);
    } finally {
        World::admin('serviceapikey/update', ['order_id' => $orderId, 'valid' => true]);
    }
    $client->flush();
});

Runner::test('getInfo always asks Tollgate (each call a use counted there)', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('valid');
    $before = World::usageTotal($orderId);
    $client = World::client(['cacheTtl' => 30.0], World::fault('via/getinfo'));
    assertSame(Reason::VALID, $client->getInfo($key)->reason);
    assertSame(Reason::VALID, $client->getInfo($key)->reason);
    assertSame(2, count(World::callsTo('getinfo', 'get_info')), 'get_info calls');
    $client->flush();
    assertSame($before + 2, World::usageTotal($orderId), 'uses');
});

Runner::test('a usage report whose answer is lost is sent again with the same batch id, and counted once', function (): void {
    ['key' => $key, 'orderId' => $orderId] = World::key('valid');
    $before = World::usageTotal($orderId);
    $client = World::client(['cacheTtl' => 30.0], World::fault('lose/report'));
    for ($i = 0; $i < 5; $i++) {
        $client->check($key);
    }
    $client->flush();
    $reports = World::callsTo('report', 'report_usage');
    assertSame(2, count($reports), 'report_usage calls');
    assertSame([true, false], array_column($reports, 'lost'), 'the first answer lost');
    assertSame($reports[0]['body'], $reports[1]['body'], 'the same batch, id included');
    assertSame(['reports' => [], 'events' => []], $client->unsent(), 'nothing left to send');
    assertSame($before + 5, World::usageTotal($orderId), 'five uses, not nine');
});
