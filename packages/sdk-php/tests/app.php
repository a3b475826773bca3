<?php

declare(strict_types=1);

// The plain PHP app (tests/app/index.php under `php -S`, APCu on) against the real Tollgate.

namespace Tollgate\Tests;

Runner::test('the php -S app: a valid key passes (X-API-Key or Bearer), no key 401, disabled or unknown key 401', function (): void {
    $valid = World::key('valid')['key'];
    $pass = World::app('/data', ["X-API-Key: {$valid}"]);
    assertSame(200, $pass['status'], $pass['body']);
    assertSame(['tier' => 'pro', 'reason' => 'VALID'], $pass['json']);
    assertSame(200, World::app('/data', ["Authorization: Bearer {$valid}"])['status'], 'Bearer');
    foreach ([
        'no key' => [[], 'MISSING_KEY'],
        'disabled' => [['X-API-Key: ' . World::key('disabled')['key']], 'INVALID_KEY'],
        'unknown' => [['X-API-Key: FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF'], 'INVALID_KEY'],
        'not a key' => [['X-API-Key: <script>'], 'INVALID_KEY'],
    ] as $what => [$headers, $code]) {
        $refused = World::app('/data', $headers);
        assertSame(401, $refused['status'], $what);
        assertSame($code, $refused['json']['error']['code'] ?? null, "{$what}: {$refused['body']}");
        assertTrue(str_starts_with($refused['headers']['content-type'] ?? '', 'application/json'), "{$what} is JSON");
    }
});

Runner::test('the php -S app: over the limit 429 with Retry-After', function (): void {
    $reply = World::app('/data', ['X-API-Key: ' . World::usedUpKey()]);
    assertSame(429, $reply['status'], $reply['body']);
    assertSame('LIMIT_EXCEEDED', $reply['json']['error']['code'] ?? null);
    assertTrue((int) ($reply['headers']['retry-after'] ?? 0) >= 1, 'Retry-After');
});

Runner::test('the php -S app: an event tracked in a request is sent when the request ends', function (): void {
    $valid = World::key('valid')['key'];
    $reply = World::app('/track?value=13', ["X-API-Key: {$valid}"]);
    assertSame(200, $reply['status'], $reply['body']);
    $id = $reply['json']['event'];
    World::recordTracked($id, 13);
    assertSame(1, World::alreadyStored($valid, [['id' => $id, 'value' => 13]]), 'stored by the end of the request');
});
