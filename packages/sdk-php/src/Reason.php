<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * The reasons a check answers: the server's reasons for `get_info` (CONTRACT §7.1, §12) plus two of the SDK's own,
 * the same strings as the Node SDK so logs and dashboards read alike whatever language the app is in.
 */
final class Reason
{
    public const VALID = 'VALID';
    public const NOT_FOUND = 'NOT_FOUND';
    public const DISABLED = 'DISABLED';
    public const CLIENT_INACTIVE = 'CLIENT_INACTIVE';
    public const NOT_ACTIVE = 'NOT_ACTIVE';
    public const EXPIRED = 'EXPIRED';
    public const LIMIT_EXCEEDED = 'LIMIT_EXCEEDED';
    public const RATE_LIMITED = 'RATE_LIMITED';
    /** Tollgate could not be asked (down, slower than `timeout`, 5xx, garbage); `valid` is then the `failOpen` option. */
    public const UNAVAILABLE = 'UNAVAILABLE';
    /** Tollgate refused the verifier token (unknown, deactivated, or without `serviceapikey.check`); never valid. */
    public const UNAUTHORIZED = 'UNAUTHORIZED';

    /** The reasons Tollgate itself answers; anything else in a `get_info` answer means the answer is not Tollgate's. */
    public const FROM_SERVER = [
        self::VALID, self::NOT_FOUND, self::DISABLED, self::CLIENT_INACTIVE, self::NOT_ACTIVE, self::EXPIRED,
        self::LIMIT_EXCEEDED, self::RATE_LIMITED,
    ];

    private function __construct()
    {
    }
}
