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

Runner::test('Tollgate stopped: a failOpen app serves, and keeps the event it tracked in APCu for a later request', function (): void {
    $reply = World::app('/open/track?value=17', ['X-API-Key: ' . World::key('valid')['key']]);
    assertSame(200, $reply['status'], $reply['body']);
    assertSame('UNAVAILABLE', $reply['json']['reason']);
    // Sent by the first request after Tollgate is back (restarted.php), then checked in the database.
    World::recordTracked($reply['json']['event'], 17);
    file_put_contents(World::env('EVENTS_FILE') . '.outage', $reply['json']['event']);
});
