<?php

declare(strict_types=1);

// The middleware answers, through each adapter: the shared table (Refusal), the key readers, the PSR-15 middleware
// with real PSR-7 messages and factories (Debian's php-nyholm-psr7; the PSR-15 interfaces from lib/psr15), the Laravel
// middleware with Laravel's own Request and JsonResponse (Debian's php-illuminate-http). Each answers like the Node
// SDK's middleware.

namespace Tollgate\Tests;

use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Nyholm\Psr7\Factory\Psr17Factory;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;
use Psr\Http\Server\RequestHandlerInterface;
use Tollgate\CheckResult;
use Tollgate\Client;
use Tollgate\Guard;
use Tollgate\Middleware\LaravelMiddleware;
use Tollgate\Middleware\Psr15Middleware;
use Tollgate\Reason;
use Tollgate\Refusal;

foreach (['/usr/share/php/Nyholm/Psr7/autoload.php', '/usr/share/php/Illuminate/Http/autoload.php'] as $library) {
    if (!is_file($library)) {
        throw new \RuntimeException("{$library} is missing: apt-get install php-nyholm-psr7 php-illuminate-http (.ci/run does)");
    }
    require_once $library;
}
require_once __DIR__ . '/lib/psr15/interfaces.php';

Runner::test('the refusal table: the Node middleware\'s statuses, codes and Retry-After', function (): void {
    $cases = [
        [null, 401, 'MISSING_KEY', null],
        [new CheckResult(false, Reason::NOT_FOUND), 401, 'INVALID_KEY', null],
        [new CheckResult(false, Reason::DISABLED), 401, 'INVALID_KEY', null],
        [new CheckResult(false, Reason::EXPIRED), 401, 'INVALID_KEY', null],
        [new CheckResult(false, Reason::LIMIT_EXCEEDED, retryAfter: 3600), 429, 'LIMIT_EXCEEDED', 3600],
        [new CheckResult(false, Reason::LIMIT_EXCEEDED), 429, 'LIMIT_EXCEEDED', 60],
        [new CheckResult(false, Reason::RATE_LIMITED, retryAfter: 9), 429, 'RATE_LIMITED', 9],
        [new CheckResult(false, Reason::UNAVAILABLE), 503, 'UNAVAILABLE', 1],
        [new CheckResult(false, Reason::UNAUTHORIZED), 500, 'VERIFIER_UNAUTHORIZED', null],
    ];
    foreach ($cases as [$result, $status, $code, $retryAfter]) {
        $refusal = Refusal::of($result);
        assertSame([$status, $code, $retryAfter], [$refusal->status, $refusal->body['error']['code'], $refusal->retryAfter], $code);
        assertTrue(is_string($refusal->body['error']['message']), 'a message');
    }
    assertSame(null, Refusal::of(new CheckResult(true, Reason::VALID)), 'valid passes');
    assertSame(null, Refusal::of(new CheckResult(true, Reason::UNAVAILABLE)), 'failOpen passes');
});

Runner::test('the key comes from X-API-Key, else Authorization: Bearer', function (): void {
    $read = static fn (array $headers): ?string => Guard::readKey(static fn (string $name): ?string => $headers[$name] ?? null);
    assertSame('K1', $read(['x-api-key' => ' K1 ', 'authorization' => 'Bearer K2']));
    assertSame('K2', $read(['authorization' => 'bearer K2']));
    assertSame('K2', $read(['x-api-key' => '', 'authorization' => 'Bearer K2']));
    assertSame(null, $read(['authorization' => 'Basic YWRtaW46eA==']));
    assertSame(null, $read(['authorization' => 'Bearer ']));
    assertSame(null, $read([]));
    assertSame('K3', Guard::serverHeader(['REDIRECT_HTTP_AUTHORIZATION' => 'K3'], 'authorization'));
});

/** Runs a PSR-15 pipeline of the middleware and a handler that answers 200 with the verdict's config. */
function psr15(Client $client, array $headers): ResponseInterface
{
    $factory = new Psr17Factory();
    $request = $factory->createServerRequest('GET', '/data', ['REMOTE_ADDR' => '203.0.113.7']);
    foreach ($headers as $name => $value) {
        $request = $request->withHeader($name, $value);
    }
    $handler = new class ($factory) implements RequestHandlerInterface {
        public function __construct(private readonly Psr17Factory $factory)
        {
        }

        public function handle(ServerRequestInterface $request): ResponseInterface
        {
            $verdict = $request->getAttribute('tollgate');
            return $this->factory->createResponse(200)->withBody($this->factory->createStream(json_encode(['tier' => $verdict->config['tier'] ?? null])));
        }
    };
    return (new Psr15Middleware($client, $factory, $factory))->process($request, $handler);
}

/** Runs the Laravel middleware with a next() that answers 200 with the verdict's config. */
function laravel(Client $client, array $headers): \Symfony\Component\HttpFoundation\Response
{
    $server = ['REMOTE_ADDR' => '203.0.113.7'];
    foreach ($headers as $name => $value) {
        $server['HTTP_' . strtoupper(str_replace('-', '_', $name))] = $value;
    }
    $request = Request::create('/data', 'GET', [], [], [], $server);
    return (new LaravelMiddleware($client))->handle($request, static function (Request $request): JsonResponse {
        return new JsonResponse(['tier' => $request->attributes->get('tollgate')->config['tier'] ?? null]);
    });
}

Runner::test('PSR-15 and Laravel: valid passes with the verdict; no key, disabled, unknown 401; limit 429; down 503; refused token 500', function (): void {
    $tollgate = World::client();
    $down = World::client([], World::fault('bad-gateway'));
    $refused = World::client([], null, 'not-a-verifier-token-5f1d');
    $cases = [
        ['valid', $tollgate, ['X-API-Key' => World::key('valid')['key']], 200, null, null],
        ['bearer', $tollgate, ['Authorization' => 'Bearer ' . World::key('valid')['key']], 200, null, null],
        ['no key', $tollgate, [], 401, 'MISSING_KEY', null],
        ['disabled', $tollgate, ['X-API-Key' => World::key('disabled')['key']], 401, 'INVALID_KEY', null],
        ['unknown', $tollgate, ['X-API-Key' => 'FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF'], 401, 'INVALID_KEY', null],
        ['limit', $tollgate, ['X-API-Key' => World::usedUpKey()], 429, 'LIMIT_EXCEEDED', 'period'],
        ['down', $down, ['X-API-Key' => World::key('valid')['key']], 503, 'UNAVAILABLE', '1'],
        ['refused', $refused, ['X-API-Key' => World::key('valid')['key']], 500, 'VERIFIER_UNAUTHORIZED', null],
    ];
    foreach ($cases as [$name, $client, $headers, $status, $code, $retryAfter]) {
        $psr = psr15($client, $headers);
        $lara = laravel($client, $headers);
        foreach (['psr15' => [$psr->getStatusCode(), (string) $psr->getBody(), $psr->getHeaderLine('Retry-After'), $psr->getHeaderLine('Content-Type')],
                  'laravel' => [$lara->getStatusCode(), (string) $lara->getContent(), (string) $lara->headers->get('Retry-After'), (string) $lara->headers->get('Content-Type')]] as $adapter => [$gotStatus, $body, $gotRetry, $type]) {
            $what = "{$adapter} {$name}";
            assertSame($status, $gotStatus, "{$what} status");
            $json = json_decode($body, true);
            if ($code === null) {
                assertSame(['tier' => 'pro'], $json, "{$what} body");
                continue;
            }
            assertSame($code, $json['error']['code'] ?? null, "{$what} code");
            assertTrue(str_starts_with($type, 'application/json'), "{$what} is JSON ({$type})");
            if ($retryAfter === null) {
                assertSame('', $gotRetry, "{$what} Retry-After");
            } elseif ($retryAfter === 'period') {
                assertTrue((int) $gotRetry >= 1, "{$what} Retry-After until the period ends ({$gotRetry})");
            } else {
                assertSame($retryAfter, $gotRetry, "{$what} Retry-After");
            }
        }
    }
    $tollgate->flush();
});
