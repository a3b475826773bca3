<?php

declare(strict_types=1);

namespace Tollgate\Tests;

/**
 * A tiny test runner (no PHPUnit: nothing can be downloaded here): test() runs a named closure, the assertions
 * throw, a summary ends the run, and the exit code is the number of failures (capped), so the Vitest file that runs
 * these scripts fails when one fails.
 */
final class Runner
{
    private static int $passed = 0;
    /** @var list<string> */
    private static array $failed = [];

    public static function test(string $name, callable $body): void
    {
        $started = microtime(true);
        try {
            $body();
            self::$passed++;
            printf("  ok   %s (%d ms)\n", $name, (int) ((microtime(true) - $started) * 1000));
        } catch (\Throwable $error) {
            self::$failed[] = $name;
            printf("  FAIL %s\n       %s\n       at %s:%d\n", $name, $error->getMessage(), $error->getFile(), $error->getLine());
        }
    }

    public static function finish(): never
    {
        printf("%d passed, %d failed\n", self::$passed, count(self::$failed));
        exit(min(count(self::$failed), 100));
    }
}

final class AssertionFailed extends \RuntimeException
{
}

function assertSame(mixed $expected, mixed $actual, string $what = ''): void
{
    if ($expected !== $actual) {
        throw new AssertionFailed(($what === '' ? '' : "{$what}: ") . 'expected ' . var_export($expected, true) . ', got ' . var_export($actual, true));
    }
}

function assertTrue(bool $condition, string $what): void
{
    if (!$condition) {
        throw new AssertionFailed("expected: {$what}");
    }
}

/** Every key of `$expected` is in `$actual` with the same value (more keys in `$actual` are fine). */
function assertSubset(array $expected, array $actual, string $what = ''): void
{
    foreach ($expected as $key => $value) {
        if (!array_key_exists($key, $actual)) {
            throw new AssertionFailed(($what === '' ? '' : "{$what}: ") . "missing {$key} in " . json_encode($actual));
        }
        if (is_array($value) && is_array($actual[$key])) {
            assertSubset($value, $actual[$key], $what === '' ? (string) $key : "{$what}.{$key}");
        } else {
            assertSame($value, $actual[$key], $what === '' ? (string) $key : "{$what}.{$key}");
        }
    }
}
