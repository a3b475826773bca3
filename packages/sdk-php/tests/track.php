<?php

declare(strict_types=1);

// track(): metered events batched to admin/usage/ingest with ids generated here, sent at flush() or when the client
// goes, retried with the same ids, stored once (the Vitest file checks the database for every id recorded here).

namespace Tollgate\Tests;

Runner::test('events tracked are sent at flush() with generated ids; a lost answer is retried with the same ids, stored once', function (): void {
    $key = World::key('valid')['key'];
    $client = World::client([], World::fault('lose/track'));
    $events = [];
    foreach ([5, 7, 11] as $value) {
        $id = $client->track($key, 'tokens', $value, ['model' => 'large']);
        assertSame(1, preg_match('/^[0-9a-f]{32}$/', $id), "a generated id: {$id}");
        $events[] = ['id' => $id, 'value' => $value];
        World::recordTracked($id, $value);
    }
    assertSame(3, count(array_unique(array_column($events, 'id'))), 'distinct ids');
    assertSame([], World::callsTo('track', 'usage/ingest'), 'nothing sent before flush()');
    $client->flush();
    $calls = World::callsTo('track', 'usage/ingest');
    assertSame(2, count($calls), 'ingest calls');
    assertSame([true, false], array_column($calls, 'lost'), 'the first answer lost');
    assertSame(array_column($events, 'id'), array_column($calls[1]['body']['events'], 'id'), 'the retry carries the same ids');
    assertSubset(['accepted' => 3, 'duplicates' => 0], $calls[0]['answer']['result'], 'the lost answer');
    assertSubset(['accepted' => 0, 'duplicates' => 3], $calls[1]['answer']['result'], 'the retry');
    assertSubset(['meter' => 'tokens', 'value' => 5, 'properties' => ['model' => 'large']], $calls[0]['body']['events'][0]);
    assertSame(1, preg_match('/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/', $calls[0]['body']['events'][0]['timestamp']), 'the time it was tracked');
    assertSame(['reports' => [], 'events' => []], $client->unsent());
    assertSame(3, World::alreadyStored($key, $events), 'Tollgate holds all three');
});

Runner::test('events still queued when the client goes are sent then (destructor)', function (): void {
    $key = World::key('valid')['key'];
    $client = World::client();
    $id = $client->track($key, 'tokens', 25);
    unset($client);
    World::recordTracked($id, 25);
    assertSame(1, World::alreadyStored($key, [['id' => $id, 'value' => 25]]), 'the tokens event');
});

Runner::test('an event Tollgate rejects (unknown meter) is logged and not retried forever', function (): void {
    World::resetLog();
    $client = World::client([], World::fault('via/rejected'));
    $client->track(World::key('valid')['key'], 'no_such_meter', 1);
    $client->flush();
    $client->flush();
    assertSame(1, count(World::callsTo('rejected', 'usage/ingest')), 'sent once');
    assertSame(['reports' => [], 'events' => []], $client->unsent());
    assertSame(1, count(World::$logged), 'log lines: ' . json_encode(World::$logged));
    assertTrue(str_contains(World::$logged[0], 'UNKNOWN_METER'), World::$logged[0]);
});

Runner::test('track() refuses what can never be an event: a negative, fractional or infinite value, a list or non-UTF-8 properties, no meter', function (): void {
    $client = World::client();
    foreach ([[-1, null], [0.5, null], [INF, null], [NAN, null], [1, ['a', 'b']]] as [$value, $properties]) {
        try {
            $client->track('K', 'tokens', $value, $properties);
            throw new AssertionFailed('accepted ' . var_export([$value, $properties], true));
        } catch (\InvalidArgumentException) {
        }
    }
    try {
        $client->track('K', 'tokens', 1, ['name' => "\xC3\x28"]);
        throw new AssertionFailed('accepted properties that are not UTF-8');
    } catch (\InvalidArgumentException) {
    }
    try {
        $client->track('K', '');
        throw new AssertionFailed('accepted an empty meter');
    } catch (\InvalidArgumentException) {
    }
    assertSame(['reports' => [], 'events' => []], $client->unsent());
});

Runner::test('1,500 events go in two calls (Tollgate takes at most 1,000 a call)', function (): void {
    $key = World::key('valid')['key'];
    $client = World::client([], World::fault('via/many'));
    for ($i = 0; $i < 1500; $i++) {
        $id = $client->track($key, 'tokens', $i);
        if ($i % 500 === 0) {
            World::recordTracked($id, $i);
        }
    }
    $client->flush();
    $calls = World::callsTo('many', 'usage/ingest');
    assertSame([1000, 500], array_map(static fn (array $call): int => count($call['body']['events']), $calls));
    assertSame([1000, 500], array_map(static fn (array $call): int => $call['answer']['result']['accepted'], $calls));
});
