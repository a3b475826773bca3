"""A FastAPI app guarded by the SDK, as an operator would write it; tests/apps_guarded.py runs it with uvicorn.

Prints `listening <port>` once its socket is bound (a free port). Needs TOLLGATE_URL and TOLLGATE_VERIFIER_TOKEN.
"""

import os
import socket

import uvicorn
from fastapi import FastAPI, Request

from tollgate import Tollgate, TollgateASGI

tollgate = Tollgate(os.environ["TOLLGATE_URL"], os.environ["TOLLGATE_VERIFIER_TOKEN"])

app = FastAPI()
app.add_middleware(TollgateASGI, tollgate=tollgate)


@app.get("/data")
async def data(request: Request) -> dict:
    return {"tier": request.state.tollgate.config.get("tier")}


if __name__ == "__main__":
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn serves: "listening" is true once printed
    print(f"listening {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
