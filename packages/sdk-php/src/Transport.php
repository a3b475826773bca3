<?php

declare(strict_types=1);

namespace Tollgate;

/**
 * POSTs JSON to Tollgate's admin API with the verifier token, through one curl handle so the calls of a request share
 * a kept-alive connection. Returns the envelope's `result`; throws HttpError for everything else (no answer, a status
 * other than 200, an answer that is not the envelope), so callers decide once what each failure means.
 */
final class Transport
{
    /** @var \CurlHandle|null */
    private $curl = null;
    private readonly string $authorization;

    public function __construct(
        private readonly string $baseUrl,
        string $token,
        private readonly float $timeout,
    ) {
        $this->authorization = 'Authorization: Basic ' . base64_encode("admin:{$token}");
    }

    /** POST /api/admin/{path} with a JSON body → the envelope's result. */
    public function call(string $path, array $params): mixed
    {
        $this->curl ??= curl_init();
        $curl = $this->curl;
        $retryAfter = null;
        $timeoutMs = max(1, (int) round($this->timeout * 1000));
        curl_reset($curl);
        curl_setopt_array($curl, [
            CURLOPT_URL => "{$this->baseUrl}/api/admin/{$path}",
            CURLOPT_POST => true,
            CURLOPT_POSTFIELDS => json_encode($params, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION),
            CURLOPT_HTTPHEADER => [$this->authorization, 'Content-Type: application/json', 'Accept: application/json', 'Expect:'],
            CURLOPT_RETURNTRANSFER => true,
            // The whole call, connection included: a slow Tollgate costs the app at most this long.
            CURLOPT_TIMEOUT_MS => $timeoutMs,
            CURLOPT_CONNECTTIMEOUT_MS => $timeoutMs,
            // Sub-second timeouts need curl not to use signals (and signals do not belong in a PHP worker anyway).
            CURLOPT_NOSIGNAL => true,
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_HEADERFUNCTION => static function ($handle, string $line) use (&$retryAfter): int {
                if (preg_match('/^retry-after:\s*(\d+)\s*$/i', $line, $match) === 1) {
                    $retryAfter = max(1, (int) $match[1]);
                }
                return strlen($line);
            },
        ]);
        $body = curl_exec($curl);
        if ($body === false) {
            throw new HttpError(0, null, curl_error($curl) !== '' ? curl_error($curl) : 'no answer');
        }
        $status = (int) curl_getinfo($curl, CURLINFO_RESPONSE_CODE);
        $envelope = json_decode((string) $body, true);
        if ($status !== 200) {
            $message = is_array($envelope) && is_array($envelope['error'] ?? null) ? ($envelope['error']['message'] ?? '') : '';
            throw new HttpError($status, $retryAfter, is_string($message) ? $message : '');
        }
        // A 200 that is not Tollgate's envelope (a captive portal, a proxy's page, a wrong base URL): not an answer.
        if (!is_array($envelope) || !array_key_exists('result', $envelope) || ($envelope['error'] ?? null) !== null) {
            throw new HttpError(200, null, 'the answer is not Tollgate\'s JSON envelope (is the base URL right?)');
        }
        return $envelope['result'];
    }
}
