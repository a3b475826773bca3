"""A Flask app guarded by the SDK, as an operator would write it; tests/apps_guarded.py runs it as a server.

Prints `listening <port>` once it serves (it takes a free port). Needs TOLLGATE_URL and TOLLGATE_VERIFIER_TOKEN.
"""

import os

from flask import Flask, jsonify, request
from werkzeug.serving import make_server

from tollgate import Tollgate, TollgateWSGI

tollgate = Tollgate(os.environ["TOLLGATE_URL"], os.environ["TOLLGATE_VERIFIER_TOKEN"])

app = Flask(__name__)
app.wsgi_app = TollgateWSGI(app.wsgi_app, tollgate)  # type: ignore[method-assign]


@app.get("/data")
def data():  # type: ignore[no-untyped-def]
    return jsonify(tier=request.environ["tollgate"].config.get("tier"))


if __name__ == "__main__":
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(f"listening {server.server_port}", flush=True)
    server.serve_forever()
