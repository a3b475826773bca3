<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * Reads a `get_info` result into a CheckResult, refusing anything that is not one: a Tollgate that answers garbage
 * must come out as UNAVAILABLE (an outage, under failOpen), never as a valid key or a crash in the app.
 */
final class ServerAnswer
{
    public static function toResult(mixed $info): CheckResult
    {
        if (!is_array($info) || !in_array($info['valid'] ?? null, [0, 1, true, false], true)
            || !in_array($info['reason'] ?? null, Reason::FROM_SERVER, true)
            || !self::intOrNull($info['order_id'] ?? null) || !self::intOrNull($info['key_id'] ?? null)
            || !self::arrayOrNull($info['config'] ?? null) || !self::arrayOrNull($info['usage'] ?? null)) {
            throw new HttpError(200, null, 'get_info answered something that is not a key verdict');
        }
        $valid = (bool) $info['valid'];
        $reason = $info['reason'];
        $usage = $info['usage'] ?? null;
        $retryAfter = match ($reason) {
            Reason::RATE_LIMITED => is_int($info['retry_after'] ?? null) ? max(1, $info['retry_after']) : 1,
            Reason::LIMIT_EXCEEDED => self::untilPeriodEnd($usage),
            default => null,
        };
        // A valid key of a plan with a limit must carry a countable `remaining`: anything else would break the countdown.
        if ($valid && $usage !== null && !(($usage['remaining'] ?? null) === null || is_int($usage['remaining']))) {
            throw new HttpError(200, null, 'get_info answered a usage that is not a count');
        }
        return new CheckResult($valid, $reason, $info['order_id'] ?? null, $info['key_id'] ?? null, $info['config'] ?? null, $usage, $retryAfter);
    }

    /** Seconds to the end of the usage period (its last day, 23:59:59 UTC), at least 1. */
    private static function untilPeriodEnd(?array $usage): ?int
    {
        $end = is_string($usage['period_end'] ?? null) ? strtotime("{$usage['period_end']}T23:59:59Z") : false;
        return $end === false ? null : max(1, $end - time());
    }

    private static function intOrNull(mixed $value): bool
    {
        return $value === null || is_int($value);
    }

    private static function arrayOrNull(mixed $value): bool
    {
        return $value === null || is_array($value);
    }
}
