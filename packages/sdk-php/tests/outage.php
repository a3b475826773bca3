<?php

declare(strict_types=1);

// Tollgate killed (the Vitest file sent SIGKILL): nothing listens on its port any more.

namespace Tollgate\Tests;

use Tollgate\Reason;

// Let the php -S app's cached verdicts (1 s) run out, so it has to ask the Tollgate that is gone.
usleep(1_100_000);

Runner::test('Tollgate stopped: UNAVAILABLE at once (connection refused), valid only with failOpen', function (): void {
    $key = World::key('valid')['key'];
    $started = microtime(true);
    assertSubset(['valid' => false, 'reason' => Reason::UNAVAILABLE], World::client()->check($key)->toArray());
    assertSubset(['valid' => true, 'reason' => Reason::UNAVAILABLE], World::client(['failOpen' => true])->check($key)->toArray());
    assertTrue(microtime(true) - $started < 1.0, 'no waiting for a timeout');
});

Runner::test('Tollgate stopped: the php -S app answers 503 UNAVAILABLE with Retry-After: 1', function (): void {
    $reply = World::app('/data', ['X-API-Key: ' . World::key('valid')['key']]);
    assertSame(503, $reply['status'], $reply['body']);
    assertSame('UNAVAILABLE', $reply['json']['error']['code'] ?? null);
    assertSame('1', $reply['headers']['retry-after'] ?? null);
});

Runner::test('Tollgate stopped: events that cannot be sent stay queued with their ids', function (): void {
    $client = World::client();
    $id = $client->track(World::key('valid')['key'], 'tokens', 3);
    $client->flush();
    assertSame([$id], array_column($client->unsent()['events'], 'id'));
    // This one is lost with its client (memory store, one request): what the README says of the memory cache.
});

Runner::test('Tollgate stopped: a flush with many calls queued gives up after the first one fails, keeping them all', function (): void {
    $client = World::client();
    for ($i = 0; $i < 5000; $i++) {
        $client->track(World::key('valid')['key'], 'tokens', $i);
    }
    $started = microtime(true);
    $client->flush();
    $took = microtime(true) - $started;
    assertSame(5000, count($client->unsent()['events']), 'events kept');
    // One call's three attempts (pauses of 50 and 200 ms), not five calls' worth (1.25 s).
    assertTrue($took < 0.9, "flush took {$took} s");
});

Runner::test('Tollgate stopped: a failOpen app serves, and keeps the event it tracked in APCu for a later request', function (): void {
    $reply = World::app('/open/track?value=17', ['X-API-Key: ' . World::key('valid')['key']]);
    assertSame(200, $reply['status'], $reply['body']);
    assertSame('UNAVAILABLE', $reply['json']['reason']);
    // Sent by the first request after Tollgate is back (restarted.php), then checked in the database.
    World::recordTracked($reply['json']['event'], 17);
    file_put_contents(World::env('EVENTS_FILE') . '.outage', $reply['json']['event']);
});

Runner::test('Tollgate stopped: at most 20,000 events wait; past that the newest are dropped, and that is logged', function (): void {
    World::resetLog();
    $client = World::client();
    $key = World::key('valid')['key'];
    for ($i = 0; $i < 20_050; $i++) {
        $client->track($key, 'tokens', $i);
    }
    $client->flush();
    $events = $client->unsent()['events'];
    assertSame(20_000, count($events), 'events kept');
    assertSame([0, 19_999], [$events[0]['value'], $events[19_999]['value']], 'the oldest kept');
    assertSame(1, count(array_filter(World::$logged, static fn (string $line): bool => str_contains($line, '50 unsent usage batches or events dropped'))), json_encode(World::$logged));
});
