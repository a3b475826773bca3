<?php

declare(strict_types=1);

// portalSession() (Tollgate issue 25): a single-use link to one client's customer portal, made with a token allowed to
// (here the administrator's; a verifier needs the `portal` scope), and refusals thrown with Tollgate's message.

namespace Tollgate\Tests;

use Tollgate\HttpError;

/** Opens the link as the portal page does (guest/portal/open with the fragment's token); the HTTP status. */
function openPortalLink(string $url): int
{
    $token = explode('#token=', $url, 2)[1];
    return World::http('POST', World::env('TOLLGATE_URL') . '/api/guest/portal/open', ['Content-Type: application/json'], json_encode(['token' => $token]))['status'];
}

/** The HttpError a call throws. */
function portalRefusal(callable $call): HttpError
{
    try {
        $call();
    } catch (HttpError $error) {
        return $error;
    }
    throw new \RuntimeException('expected an HttpError');
}

Runner::test('portalSession makes a link with the scopes asked, which opens once; refusals carry the message', function (): void {
    $clientId = World::admin('client/create', ['email' => 'php-portal-' . bin2hex(random_bytes(4)) . '@example.com', 'first_name' => 'Php', 'password' => 'Client-Passw0rd']);
    $client = World::client([], null, World::env('TOLLGATE_ADMIN_TOKEN'));
    $session = $client->portalSession($clientId, ['wallet', 'keys'], ['returnUrl' => 'https://app.example.com/billing', 'expiresIn' => 300]);
    assertSubset(['client_id' => $clientId, 'scopes' => ['keys', 'wallet'], 'return_url' => 'https://app.example.com/billing'], $session, 'the link');
    assertSame(1, preg_match('~/portal#token=[A-Za-z0-9_-]{40,}$~', $session['url']), 'a token in the fragment');
    assertSame(200, openPortalLink($session['url']), 'opened');
    assertSame(422, openPortalLink($session['url']), 'opened again');
    assertSame(['keys', 'usage', 'invoices', 'wallet'], $client->portalSession($clientId)['scopes'], 'every scope by default');

    assertSame(404, portalRefusal(fn () => $client->portalSession(99999999))->status, 'unknown client');
    $bad = portalRefusal(fn () => $client->portalSession($clientId, ['profile']));
    assertSame(422, $bad->status, 'bad scope');
    assertTrue(str_contains($bad->detail, 'scopes'), 'names scopes');
    assertTrue(str_contains(portalRefusal(fn () => $client->portalSession($clientId, null, ['expiresIn' => 5]))->detail, 'expires_in'), 'names expires_in');
    // The suite's verifier token has no portal scope.
    assertSame(403, portalRefusal(fn () => World::client()->portalSession($clientId))->status, 'a verifier without the scope');
});
