<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * Tollgate answered something other than HTTP 200. `detail` is the envelope's error message (never a key or the
 * token); `status` 0 means no answer at all (refused connection, timeout, DNS) and `detail` then says which.
 */
final class HttpError extends \RuntimeException
{
    public function __construct(
        public readonly int $status,
        public readonly ?int $retryAfter = null,
        public readonly string $detail = '',
    ) {
        parent::__construct($status === 0
            ? "Tollgate could not be reached: {$detail}"
            : "Tollgate answered HTTP {$status}" . ($detail === '' ? '' : ": {$detail}"));
    }

    /** A 401/403: the verifier token is unknown, deactivated, or lacks `serviceapikey.check`. Retrying cannot help. */
    public function refusedToken(): bool
    {
        return $this->status === 401 || $this->status === 403;
    }

    /** No answer, a 5xx, or an answer that is not Tollgate's envelope: worth trying again later. */
    public function transient(): bool
    {
        return $this->status === 0 || $this->status >= 500 || $this->status === 200;
    }
}
