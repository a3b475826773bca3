"""Serves an operator's app file the way they would run it: `serve.py flask|fastapi <file.py>` loads the file (a
Developers page quick start, written out as printed by test/processes/sdk-python.test.ts) and serves its `app` on a
free port, with werkzeug (Flask) or uvicorn (FastAPI), printing `listening <port>` once connections are taken."""

import importlib.util
import socket
import sys


def load_app(path: str) -> object:
    spec = importlib.util.spec_from_file_location("quickstart", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app  # type: ignore[attr-defined]


def main() -> None:
    kind, path = sys.argv[1], sys.argv[2]
    app = load_app(path)
    if kind == "flask":
        from werkzeug.serving import make_server

        server = make_server("127.0.0.1", 0, app, threaded=True)  # type: ignore[arg-type]
        print(f"listening {server.server_port}", flush=True)
        server.serve_forever()
        return
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn serves: "listening" is true once printed
    print(f"listening {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
