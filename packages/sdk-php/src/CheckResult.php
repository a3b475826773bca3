<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * The verdict on one API key, as the Node SDK's VerifyResult: `valid`, `reason` (see Reason), the key's order and key
 * ids, its custom parameters (`config`, when valid) and its usage in the current period (`usage`: period_start,
 * period_end, used, limit, remaining, and the plan's extra fields), `retryAfter` in seconds for RATE_LIMITED and
 * LIMIT_EXCEEDED.
 */
final class CheckResult
{
    /**
     * @param array<string, mixed>|null $config
     * @param array<string, mixed>|null $usage
     */
    public function __construct(
        public readonly bool $valid,
        public readonly string $reason,
        public readonly ?int $orderId = null,
        public readonly ?int $keyId = null,
        public readonly ?array $config = null,
        public readonly ?array $usage = null,
        public readonly ?int $retryAfter = null,
    ) {
    }

    public static function notFound(): self
    {
        return new self(false, Reason::NOT_FOUND);
    }

    /** @return array<string, mixed> */
    public function toArray(): array
    {
        return [
            'valid' => $this->valid,
            'reason' => $this->reason,
            'orderId' => $this->orderId,
            'keyId' => $this->keyId,
            'config' => $this->config,
            'usage' => $this->usage,
            'retryAfter' => $this->retryAfter,
        ];
    }

    /** Rebuilds a result stored by toArray() (the APCu cache holds arrays, not objects of this class). */
    public static function fromArray(array $data): self
    {
        return new self(
            (bool) $data['valid'],
            (string) $data['reason'],
            $data['orderId'] ?? null,
            $data['keyId'] ?? null,
            $data['config'] ?? null,
            $data['usage'] ?? null,
            $data['retryAfter'] ?? null,
        );
    }
}
