<?php

declare(strict_types=1);

/*
 * The two PSR-15 interfaces, exactly as psr/http-server-middleware 1.0 declares them (https://www.php-fig.org/psr/psr-15/),
 * for the tests only: that Composer package cannot be downloaded here, and Debian's php-psr extension, which would
 * provide them, conflicts with Composer's own Debian dependencies (php-symfony-service-contracts Breaks php-psr).
 * Declared only when nothing else has (an installed psr/http-server-middleware or the php-psr extension wins).
 */

namespace Psr\Http\Server;

use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;

if (!interface_exists(RequestHandlerInterface::class)) {
    interface RequestHandlerInterface
    {
        public function handle(ServerRequestInterface $request): ResponseInterface;
    }
}

if (!interface_exists(MiddlewareInterface::class)) {
    interface MiddlewareInterface
    {
        public function process(ServerRequestInterface $request, RequestHandlerInterface $handler): ResponseInterface;
    }
}
