<?php

declare(strict_types=1);

// Tollgate started again on the same port and data.

namespace Tollgate\Tests;

use Tollgate\Reason;

Runner::test('Tollgate back: keys are checked again', function (): void {
    assertSubset(['valid' => true, 'reason' => Reason::VALID], World::client()->check(World::key('valid')['key'])->toArray());
    assertSame(Reason::DISABLED, World::client()->check(World::key('disabled')['key'])->reason);
});

Runner::test('Tollgate back: the php -S app serves again, and its next request sends the event left from the outage', function (): void {
    $valid = World::key('valid')['key'];
    $reply = World::app('/data', ["X-API-Key: {$valid}"]);
    assertSame(200, $reply['status'], $reply['body']);
    $id = (string) file_get_contents(World::env('EVENTS_FILE') . '.outage');
    assertSame(1, World::alreadyStored($valid, [['id' => $id, 'value' => 17]]), 'the outage event is stored');
});
