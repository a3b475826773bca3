<?php

declare(strict_types=1);

/*
 * The PHP SDK's tests: `php tests/run.php main|outage|restarted`, run by test/processes/sdk-php.test.ts, which starts
 * Tollgate, the fault server and the guarded php -S app and passes their URLs, tokens and keys in the environment.
 * `main` runs with Tollgate up; `outage` after it was killed; `restarted` once it is back.
 */

require __DIR__ . '/../autoload.php';
require __DIR__ . '/lib/Runner.php';
require __DIR__ . '/lib/World.php';

use Tollgate\Tests\Runner;

$groups = [
    'main' => ['check.php', 'cache-usage.php', 'failures.php', 'track.php', 'middleware.php', 'app.php', 'portal.php'],
    'outage' => ['outage.php'],
    'restarted' => ['restarted.php'],
];
$group = $argv[1] ?? 'main';
if (!isset($groups[$group])) {
    fwrite(STDERR, "usage: php tests/run.php " . implode('|', array_keys($groups)) . "\n");
    exit(2);
}
foreach ($groups[$group] as $file) {
    echo "{$file}\n";
    require __DIR__ . "/{$file}";
}
Runner::finish();
