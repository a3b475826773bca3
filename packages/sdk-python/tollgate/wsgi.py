"""WSGI middleware (Flask, Django, any WSGI app): requests without a valid key are answered here.

    app.wsgi_app = TollgateWSGI(app.wsgi_app, tollgate)          # Flask
    application = TollgateWSGI(get_wsgi_application(), tollgate)  # Django's wsgi.py

A request that passes carries the verdict as `environ["tollgate"]` (Flask: `request.environ["tollgate"]`; Django:
`request.META["tollgate"]`). Refusals are guard.py's: 401, 429 with Retry-After, 503, 500.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional

from .client import Tollgate
from .guard import read_key, refusal_of

Environ = Dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


class TollgateWSGI:
    def __init__(self, app: WSGIApp, tollgate: Tollgate, ip: Optional[Callable[[Environ], Optional[str]]] = None) -> None:
        """`ip(environ)`: the end user's address (default REMOTE_ADDR; behind a proxy, read what your proxy sets)."""
        self.app = app
        self.tollgate = tollgate
        self.ip = ip if ip is not None else (lambda environ: environ.get("REMOTE_ADDR"))

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        key = read_key(lambda name: environ.get("HTTP_" + name.upper().replace("-", "_")))
        result = None if key is None else self.tollgate.check(key, self.ip(environ))
        refusal = refusal_of(result)
        if refusal is None:
            environ["tollgate"] = result
            return self.app(environ, start_response)
        start_response(refusal.status_line, refusal.headers())
        return [refusal.body()]
