"""portal_session (Tollgate issue 25): a single-use link to one client's customer portal, made with a token allowed to
(here the administrator's; a verifier needs the `portal` scope), and refusals raised with Tollgate's message."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import datetime

from tests.support import ADMIN_TOKEN, BASE_URL, LiveCase, admin
from tollgate import TollgateHttpError


def open_link(url: str) -> int:
    """Opens the link as the portal page does (guest/portal/open with the fragment's token); the HTTP status."""
    token = url.split("#token=", 1)[1]
    request = urllib.request.Request(
        f"{BASE_URL}/api/guest/portal/open",
        data=json.dumps({"token": token}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class PortalSessionTest(LiveCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.client_id = admin("client/create", {"email": f"py-portal-{time.time_ns()}@example.com", "first_name": "Py", "password": "Client-Passw0rd"})

    def test_a_link_with_the_scopes_asked_that_opens_once(self) -> None:
        tollgate = self.client(token=ADMIN_TOKEN)
        session = tollgate.portal_session(self.client_id, ["wallet", "invoices"], return_url="https://app.example.com/billing", expires_in=300)
        self.assertEqual(session["client_id"], self.client_id)
        self.assertEqual(session["scopes"], ["invoices", "wallet"])
        self.assertEqual(session["return_url"], "https://app.example.com/billing")
        self.assertIn("/portal#token=", session["url"])
        expires = datetime.fromisoformat(session["expires_at"].replace("Z", "+00:00")).timestamp()
        self.assertLessEqual(expires - time.time(), 301)
        self.assertEqual(open_link(session["url"]), 200)
        self.assertEqual(open_link(session["url"]), 422)

    def test_defaults_to_every_scope(self) -> None:
        session = self.client(token=ADMIN_TOKEN).portal_session(self.client_id)
        self.assertEqual(session["scopes"], ["keys", "usage", "invoices", "wallet"])

    def test_refusals(self) -> None:
        tollgate = self.client(token=ADMIN_TOKEN)
        with self.assertRaises(TollgateHttpError) as unknown:
            tollgate.portal_session(99_999_999)
        self.assertEqual(unknown.exception.status, 404)
        with self.assertRaises(TollgateHttpError) as bad:
            tollgate.portal_session(self.client_id, ["profile"])
        self.assertEqual(bad.exception.status, 422)
        self.assertIn("scopes", bad.exception.detail)
        with self.assertRaises(TollgateHttpError) as short:
            tollgate.portal_session(self.client_id, expires_in=5)
        self.assertIn("expires_in", short.exception.detail)
        # The suite's verifier token has no portal scope.
        with self.assertRaises(TollgateHttpError) as scope:
            self.client().portal_session(self.client_id)
        self.assertEqual(scope.exception.status, 403)
        with self.assertRaises(TypeError):
            tollgate.portal_session(0)
