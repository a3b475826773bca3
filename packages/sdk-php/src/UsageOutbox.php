<?php

declare(strict_types=1);

namespace Tollgate;

use Tollgate\Cache\Store;

/**
 * Usage on its way to Tollgate, exactly once:
 * - metered events from track(), each with an id generated when it is tracked, sent to `admin/usage/ingest`
 *   (Tollgate stores an id once per order, so a resent event is a duplicate, not a second use);
 * - uses answered from the cache, sent to `admin/serviceapikey/report_usage` in batches with a generated `batch_id`
 *   (a batch id already seen adds nothing).
 * A failed send is retried with the same ids, at once a few times, then at the next flush; with a shared store (APCu)
 * that next flush may be another request's, so nothing is lost when one request gives up.
 */
final class UsageOutbox
{
    private const MAX_EVENTS_PER_CALL = 1000;
    /** Below the server's 1 MB body limit with room to spare for the envelope and multi-byte characters. */
    private const MAX_EVENT_BYTES_PER_CALL = 512_000;
    private const MAX_ITEMS_PER_REPORT = 10_000;
    /**
     * What may wait for Tollgate (in APCu, for the whole pool): about 10 MB of events at most, so an outage of hours
     * cannot fill the shared memory or make every request rewrite an ever longer list. The newest are dropped past it.
     */
    private const MAX_UNSENT_EVENTS = 20_000;
    private const MAX_UNSENT_REPORTS = 1_000;
    /** Pauses before the 2nd and 3rd attempt of one flush: short, since flushing happens at the end of a request. */
    private const RETRY_PAUSES_MS = [50, 200];

    /** @var array<int, int> key id → uses answered from the cache, not yet in a batch */
    private array $uses = [];
    /** @var list<array<string, mixed>> events tracked, not yet handed to the store */
    private array $events = [];
    /** @var callable(\Throwable, string): void */
    private $onError;

    public function __construct(
        private readonly Store $store,
        private readonly string $namespace,
        callable $onError,
    ) {
        $this->onError = $onError;
    }

    public function countUse(int $keyId): void
    {
        $this->uses[$keyId] = ($this->uses[$keyId] ?? 0) + 1;
    }

    public function addEvent(array $event): void
    {
        $this->events[] = $event;
    }

    /** Whether this request left anything to send (the store's leftovers from other requests aside). */
    public function hasWork(): bool
    {
        return $this->uses !== [] || $this->events !== [];
    }

    /**
     * Sends everything: this client's usage and whatever earlier sends left in the store. Once a send fails for a
     * reason that may pass (Tollgate down), the rest is kept without trying: during an outage a request spends one
     * send's retries, not one per queued batch.
     */
    public function flush(Transport $transport): void
    {
        $reports = $this->newReports();
        $events = $this->events;
        $this->uses = [];
        $this->events = [];
        [$reports, $events] = $this->store->locked(function () use ($reports, $events): array {
            $left = $this->store->get($this->listKey()) ?? ['reports' => [], 'events' => []];
            $this->store->delete($this->listKey());
            return [array_merge($left['reports'], $reports), array_merge($left['events'], $events)];
        });
        $down = false;
        $unsentReports = [];
        foreach ($reports as $batch) {
            if ($down || !$this->sendWithRetries(fn () => $this->sendReport($transport, $batch), 'usage report')) {
                $down = true;
                $unsentReports[] = $batch;
            }
        }
        $unsentEvents = [];
        foreach ($this->chunks($events) as $chunk) {
            if ($down || !$this->sendWithRetries(fn () => $this->sendEvents($transport, $chunk), 'usage events')) {
                $down = true;
                array_push($unsentEvents, ...$chunk);
            }
        }
        if ($unsentReports !== [] || $unsentEvents !== []) {
            $this->keep($unsentReports, $unsentEvents);
        }
    }

    /** Puts unsent usage back in the store, oldest first, within the caps (what is over them is dropped, and said). */
    private function keep(array $reports, array $events): void
    {
        $dropped = $this->store->locked(function () use ($reports, $events): int {
            $left = $this->store->get($this->listKey()) ?? ['reports' => [], 'events' => []];
            $reports = array_merge($reports, $left['reports']);
            $events = array_merge($events, $left['events']);
            $dropped = max(0, count($reports) - self::MAX_UNSENT_REPORTS) + max(0, count($events) - self::MAX_UNSENT_EVENTS);
            $this->store->set($this->listKey(), [
                'reports' => array_slice($reports, 0, self::MAX_UNSENT_REPORTS),
                'events' => array_slice($events, 0, self::MAX_UNSENT_EVENTS),
            ], 0);
            return $dropped;
        });
        if ($dropped > 0) {
            ($this->onError)(new \OverflowException("{$dropped} unsent usage batches or events dropped: too many waiting while Tollgate cannot be reached"), 'usage dropped');
        }
    }

    /** What is still waiting in the store (tests, and an app that wants to know before it exits). */
    public function unsent(): array
    {
        return $this->store->get($this->listKey()) ?? ['reports' => [], 'events' => []];
    }

    private function listKey(): string
    {
        return "{$this->namespace}:outbox";
    }

    /** @return list<array{batch_id: string, usage: list<array{key_id: int, count: int}>}> */
    private function newReports(): array
    {
        $usage = [];
        foreach ($this->uses as $keyId => $count) {
            $usage[] = ['key_id' => $keyId, 'count' => $count];
        }
        $reports = [];
        foreach (array_chunk($usage, self::MAX_ITEMS_PER_REPORT) as $items) {
            $reports[] = ['batch_id' => self::newId(), 'usage' => $items];
        }
        return $reports;
    }

    /** @return list<list<array<string, mixed>>> events in calls of ≤ 1,000 and ≤ ~512 kB */
    private function chunks(array $events): array
    {
        $chunks = [];
        $chunk = [];
        $bytes = 0;
        foreach ($events as $event) {
            $size = strlen((string) json_encode($event));
            if ($chunk !== [] && (count($chunk) >= self::MAX_EVENTS_PER_CALL || $bytes + $size > self::MAX_EVENT_BYTES_PER_CALL)) {
                $chunks[] = $chunk;
                $chunk = [];
                $bytes = 0;
            }
            $chunk[] = $event;
            $bytes += $size;
        }
        if ($chunk !== []) {
            $chunks[] = $chunk;
        }
        return $chunks;
    }

    /**
     * Runs `$send` up to three times while it fails for a reason that may pass (no answer, 5xx, garbage); true when
     * it is done with (sent, or refused for good and logged), false to keep it for a later flush.
     */
    private function sendWithRetries(callable $send, string $what): bool
    {
        for ($attempt = 0; ; $attempt++) {
            try {
                $send();
                return true;
            } catch (HttpError $error) {
                ($this->onError)($error, $what);
                if (!$error->transient() && $error->status !== 429) {
                    return true; // refused: sending it again would be refused again (logged above)
                }
                if ($attempt >= count(self::RETRY_PAUSES_MS)) {
                    return false;
                }
                usleep(self::RETRY_PAUSES_MS[$attempt] * 1000);
            }
        }
    }

    private function sendReport(Transport $transport, array &$batch): void
    {
        for (;;) {
            try {
                $transport->call('serviceapikey/report_usage', $batch);
                return;
            } catch (HttpError $error) {
                // A key deleted since it was cached: the server refused the whole batch and recorded nothing, so the
                // same id can carry the batch without that key (as the Node SDK does).
                if ($error->status === 422 && preg_match('/usage\.(\d+)\.key_id/', $error->detail, $m) === 1 && count($batch['usage']) > 1) {
                    array_splice($batch['usage'], (int) $m[1], 1);
                    ($this->onError)($error, 'usage report refused');
                    continue;
                }
                throw $error;
            }
        }
    }

    private function sendEvents(Transport $transport, array $events): void
    {
        $result = $transport->call('usage/ingest', ['events' => $events]);
        if (!is_array($result) || !isset($result['accepted'])) {
            throw new HttpError(200, null, 'usage/ingest answered something else than {accepted, duplicates, rejected}');
        }
        // A rejected event stored nothing and would be rejected again: say so (once per code) and let it go.
        foreach ($result['rejected'] ?? [] as $rejection) {
            $code = (string) ($rejection['code'] ?? 'REJECTED');
            ($this->onError)(new \UnexpectedValueException("event {$events[$rejection['index'] ?? 0]['id']} rejected: {$code} " . ($rejection['message'] ?? '')), "usage event rejected ({$code})");
        }
    }

    /** 32 hex characters from the CSPRNG: an event id or a batch id. */
    public static function newId(): string
    {
        return bin2hex(random_bytes(16));
    }
}
