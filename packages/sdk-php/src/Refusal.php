<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * What a guarded endpoint answers instead of serving the request: the same statuses and JSON bodies as the Node
 * SDK's middleware, so an API answers alike whatever its language.
 *
 * | verdict                                   | status | error.code            |
 * | no key                                    | 401    | MISSING_KEY           |
 * | unknown, disabled, expired, suspended…    | 401    | INVALID_KEY           |
 * | LIMIT_EXCEEDED                            | 429    | LIMIT_EXCEEDED (+ Retry-After: seconds to the period's end) |
 * | RATE_LIMITED                              | 429    | RATE_LIMITED (+ Retry-After) |
 * | UNAVAILABLE (Tollgate down, failOpen off) | 503    | UNAVAILABLE (+ Retry-After: 1) |
 * | UNAUTHORIZED (verifier token refused)     | 500    | VERIFIER_UNAUTHORIZED |
 */
final class Refusal
{
    /** @param array{error: array{code: string, message: string}} $body */
    public function __construct(
        public readonly int $status,
        public readonly array $body,
        public readonly ?int $retryAfter = null,
    ) {
    }

    /** null to let the request through (a valid key, or failOpen while Tollgate is down), else what to answer. */
    public static function of(?CheckResult $result): ?self
    {
        if ($result === null) {
            return self::make(401, 'MISSING_KEY', 'An API key is required (X-API-Key or Authorization: Bearer)');
        }
        if ($result->valid) {
            return null;
        }
        return match ($result->reason) {
            Reason::LIMIT_EXCEEDED => self::make(429, 'LIMIT_EXCEEDED', 'The usage limit of this API key is reached', $result->retryAfter ?? 60),
            Reason::RATE_LIMITED => self::make(429, 'RATE_LIMITED', 'Too many requests', $result->retryAfter ?? 1),
            Reason::UNAVAILABLE => self::make(503, 'UNAVAILABLE', 'The API key could not be verified; try again', 1),
            // This server's own configuration (its verifier token), not the caller's key: a 500, and no "try again".
            Reason::UNAUTHORIZED => self::make(500, 'VERIFIER_UNAUTHORIZED', 'This API cannot verify API keys: its verifier token was refused'),
            default => self::make(401, 'INVALID_KEY', 'The API key is not valid'),
        };
    }

    /** The headers to send with the body (Content-Type, and Retry-After when there is one). */
    public function headers(): array
    {
        $headers = ['Content-Type' => 'application/json; charset=utf-8'];
        if ($this->retryAfter !== null) {
            $headers['Retry-After'] = (string) $this->retryAfter;
        }
        return $headers;
    }

    public function json(): string
    {
        return json_encode($this->body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
    }

    private static function make(int $status, string $code, string $message, ?int $retryAfter = null): self
    {
        return new self($status, ['error' => ['code' => $code, 'message' => $message]], $retryAfter);
    }
}
