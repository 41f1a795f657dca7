"""The listening socket and uvicorn: the socket is bound here, before uvicorn starts, so that a
bad host or port is a one-line error and port 0 tells which port it picked."""

from __future__ import annotations

import signal
import socket

from ..errors import UserError

BACKLOG = 2048  # connections the kernel queues before they are accepted


def listen(host: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: a free port) and listening with ``backlog``."""
    if not 0 <= port <= 65535:
        raise UserError(f"serve --port: expected a port from 0 to 65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except (socket.gaierror, OSError) as err:
        raise UserError(f"serve --host {host}: cannot resolve it ({err.strerror or err})") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as err:
        sock.close()
        raise UserError(f"serve: cannot listen on {host}:{port} ({err.strerror or err})") from None
    sock.set_inheritable(True)
    return sock


def url(sock: socket.socket) -> str:
    """http://host:port/ of a listening socket."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def serve(app, sock: socket.socket, backlog: int = BACKLOG, log_level: str = "warning", ready=None) -> None:
    """Serve ``app`` on ``sock`` with uvicorn until interrupted; ``ready()`` is called once uvicorn
    has started (its signal handlers in place), so a line that says the server is up, printed
    there, is true, and a Ctrl-C after it is uvicorn's to end the server with. A SIGINT that ended
    the server raises KeyboardInterrupt here, as it does on a terminal, even where the process
    started with SIGINT ignored (a background job of a script: uvicorn stops on it all the same,
    then raises it again under the ignoring handler, and the command would end 0 as if asked to)."""
    import uvicorn

    class Server(uvicorn.Server):
        interrupted = False  # a SIGINT ended it

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=sockets)
            if ready is not None and self.started and not self.should_exit:
                ready()

        def handle_exit(self, sig, frame) -> None:
            self.interrupted |= sig == signal.SIGINT
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, backlog=backlog, log_level=log_level, access_log=False, timeout_keep_alive=5)
    server = Server(config)
    server.run(sockets=[sock])
    if server.interrupted:  # reached only where SIGINT's own handler raised nothing: ignored
        raise KeyboardInterrupt
