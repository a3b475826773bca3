<?php

declare(strict_types=1);

namespace Tollgate;

/*
 * The plain-PHP guard as a function, for scripts: `$verdict = \Tollgate\guard($client);` at the top of a script lets a
 * request with a valid key through (returning its verdict) and answers every other one (401/429/500/503 with the JSON
 * body of the Node middleware) and ends the script. Composer loads this file ("autoload.files"); without Composer,
 * require it beside the classes.
 */
if (!function_exists(__NAMESPACE__ . '\\guard')) {
    function guard(Client $client, ?array $server = null, ?string $ip = null): CheckResult
    {
        return Guard::protect($client, $server, $ip);
    }
}
