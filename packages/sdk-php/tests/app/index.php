<?php

declare(strict_types=1);

/*
 * "A plain PHP app guarded by the SDK", served by `php -S` in the tests: no framework, the SDK loaded without
 * Composer, one line of guard at the top. Under /open/ it fails open (serves while Tollgate is down). /track records a
 * metered use of the request's key and answers the event's id.
 */

require __DIR__ . '/../../autoload.php';

$path = (string) parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH);
$failOpen = str_starts_with($path, '/open/');
// TOLLGATE_CACHE_TTL: the FPM test stretches the cache so a slow machine cannot expire it between its requests.
$client = new Tollgate\Client((string) getenv('TOLLGATE_URL'), (string) getenv('TOLLGATE_VERIFIER_TOKEN'), [
    'failOpen' => $failOpen,
    'cacheTtl' => (float) (getenv('TOLLGATE_CACHE_TTL') ?: 1.0),
]);

$verdict = Tollgate\guard($client);

$answer = ['tier' => $verdict->config['tier'] ?? null, 'reason' => $verdict->reason];
if (str_ends_with($path, '/track')) {
    $key = Tollgate\Guard::readKey(static fn (string $name): ?string => Tollgate\Guard::serverHeader($_SERVER, $name));
    $answer['event'] = $client->track((string) $key, 'tokens', (int) ($_GET['value'] ?? 1));
}
header('Content-Type: application/json');
echo json_encode($answer);
