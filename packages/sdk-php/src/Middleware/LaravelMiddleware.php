<?php

declare(strict_types=1);

namespace Tollgate\Middleware;

use Closure;
use Illuminate\Http\JsonResponse;
use Illuminate\Http\Request;
use Tollgate\Client;
use Tollgate\Guard;
use Tollgate\Refusal;

/**
 * Laravel middleware: register it on routes (`->middleware(LaravelMiddleware::class)`) with the Client bound in the
 * container (`$this->app->singleton(Client::class, fn () => new Client(config('services.tollgate.url'), …))`).
 * The end user's address is `$request->ip()` (Laravel's trusted proxies decide it). A request that passes goes on
 * with the verdict in `$request->attributes->get('tollgate')`.
 */
final class LaravelMiddleware
{
    public function __construct(private readonly Client $client)
    {
    }

    public function handle(Request $request, Closure $next): mixed
    {
        $key = Guard::readKey(static fn (string $name): ?string => $request->headers->get($name));
        $result = $key === null ? null : $this->client->check($key, $request->ip());
        $refusal = Refusal::of($result);
        if ($refusal === null) {
            $request->attributes->set('tollgate', $result);
            return $next($request);
        }
        return new JsonResponse($refusal->body, $refusal->status, $refusal->headers());
    }
}
