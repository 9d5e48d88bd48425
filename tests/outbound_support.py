"""Real loopback listeners that count the connections they accept (issue 29, finding 4).

A :class:`Listener` binds one TCP socket per address on a free port, accepts in a thread and
counts every connection, then answers as its ``mode`` says: ``status`` (a healthy
``mnemon-memory/1`` status), ``garbage`` (bytes that are no HTTP), ``not-json`` (200 with a
text body), ``error`` (500 with an internal error text), ``silent`` (never answers), ``close``
(closes at once). The endpoint spellings of :func:`loopback_spellings` all reach one of its
sockets if nothing stops them, so a count of zero proves that no connection was made.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

STATUS_BODY = b'{"contract": "mnemon-memory/1", "healthy": true, "total": 0}'
INTERNAL_TEXT = "FATAL: password authentication failed for user postgres (internal-7f3a)"
_REPLIES = {
    "status": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(STATUS_BODY)).encode()
    + b"\r\nConnection: close\r\n\r\n"
    + STATUS_BODY,
    "garbage": b"\x00\x01\x02 not http at all\r\n\r\n",
    "not-json": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 21\r\n"
    b"Connection: close\r\n\r\n<html>control</html>\n",
    "error": b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\n\r\n"
    + ('{"error": {"code": "db-down", "message": "' + INTERNAL_TEXT + '"}}').encode(),
}


class Listener:
    """TCP listeners on ``hosts`` (one free port each) counting accepted connections."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1", "::1"), mode: str = "close"):
        self.mode = mode
        self.ports: dict[str, int] = {}
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._accepted = 0
        self._stop = threading.Event()
        for host in hosts:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, 0))
            sock.listen(64)
            sock.settimeout(0.1)
            self.ports[host] = sock.getsockname()[1]
            self._sockets.append(sock)
        self._threads = [
            threading.Thread(target=self._serve, args=(s,), daemon=True) for s in self._sockets
        ]
        for thread in self._threads:
            thread.start()

    @property
    def accepted(self) -> int:
        """How many connections were accepted so far."""
        with self._lock:
            return self._accepted

    def url(self, host: str = "127.0.0.1") -> str:
        """``http://host:port`` of the listener on ``host``."""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.ports[host]}"

    def _serve(self, sock: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except (TimeoutError, OSError):
                continue
            with self._lock:
                self._accepted += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn, suppress(OSError):
            if self.mode == "close":
                return
            conn.settimeout(2.0)
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            if self.mode == "silent":
                self._stop.wait(30)
                return
            conn.sendall(_REPLIES[self.mode])

    def close(self) -> None:
        """Stop accepting and close the sockets."""
        self._stop.set()
        for thread in self._threads:
            thread.join(2)
        for sock in self._sockets:
            sock.close()


@contextmanager
def listening(
    hosts: tuple[str, ...] = ("127.0.0.1", "::1"), mode: str = "close"
) -> Iterator[Listener]:
    """A :class:`Listener` for the block."""
    listener = Listener(hosts, mode)
    try:
        yield listener
    finally:
        listener.close()


def closed_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def loopback_name() -> str | None:
    """This machine's host name when it resolves to loopback only (a name, not ``localhost``)."""
    name = socket.gethostname()
    try:
        infos = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)
    except OSError:
        return None
    addresses = {info[4][0] for info in infos}
    loopback = all(a.startswith("127.") or a == "::1" for a in addresses)
    return name if addresses and loopback and name != "localhost" else None


def loopback_spellings(listener: Listener) -> dict[str, str]:
    """Every spelling of a loopback endpoint the issue names, each reaching ``listener``."""
    v4, v6 = listener.ports["127.0.0.1"], listener.ports["::1"]
    spellings = {
        "localhost": f"http://localhost:{v4}",
        "127.0.0.1": f"http://127.0.0.1:{v4}",
        "127.1": f"http://127.1:{v4}",
        "2130706433": f"http://2130706433:{v4}",
        "0.0.0.0": f"http://0.0.0.0:{v4}",
        "[::1]": f"http://[::1]:{v6}",
        "::ffff:127.0.0.1": f"http://[::ffff:127.0.0.1]:{v4}",
    }
    name = loopback_name()
    if name is not None:
        spellings["hostname"] = f"http://{name}:{v4}"
    return spellings
