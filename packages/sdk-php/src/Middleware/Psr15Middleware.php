<?php

declare(strict_types=1);

namespace Tollgate\Middleware;

use Psr\Http\Message\ResponseFactoryInterface;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;
use Psr\Http\Message\StreamFactoryInterface;
use Psr\Http\Server\MiddlewareInterface;
use Psr\Http\Server\RequestHandlerInterface;
use Tollgate\Client;
use Tollgate\Guard;
use Tollgate\Refusal;

/**
 * PSR-15 middleware (Slim, Mezzio, Laminas, any PSR-15 pipeline). Needs the PSR-15/PSR-7/PSR-17 interfaces
 * (psr/http-server-middleware from Composer, or Debian's php-psr extension) and the app's own PSR-17 factories to
 * build refusals. A request that passes goes on with the verdict in its `tollgate` attribute.
 */
final class Psr15Middleware implements MiddlewareInterface
{
    public function __construct(
        private readonly Client $client,
        private readonly ResponseFactoryInterface $responses,
        private readonly StreamFactoryInterface $streams,
        private readonly string $attribute = 'tollgate',
    ) {
    }

    public function process(ServerRequestInterface $request, RequestHandlerInterface $handler): ResponseInterface
    {
        $key = Guard::readKey(static fn (string $name): ?string => $request->hasHeader($name) ? $request->getHeaderLine($name) : null);
        $address = $request->getServerParams()['REMOTE_ADDR'] ?? null;
        $result = $key === null ? null : $this->client->check($key, is_string($address) ? $address : null);
        $refusal = Refusal::of($result);
        if ($refusal === null) {
            return $handler->handle($request->withAttribute($this->attribute, $result));
        }
        $response = $this->responses->createResponse($refusal->status)->withBody($this->streams->createStream($refusal->json()));
        foreach ($refusal->headers() as $name => $value) {
            $response = $response->withHeader($name, $value);
        }
        return $response;
    }
}
