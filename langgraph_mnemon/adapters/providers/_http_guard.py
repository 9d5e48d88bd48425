"""Where the HTTP provider may connect: never to an internal address unless it is allowed.

An endpoint's host is resolved once, every address it resolves to is checked, and the
connection goes to a checked address: a second resolution never happens, so a name that
answers with a public address first and an internal one next (DNS rebinding) cannot slip
through. Internal means loopback, private, link-local, unspecified, multicast, reserved or
otherwise not globally routable, including an IPv4 address wrapped in IPv6 (``::ffff:127.0.0.1``,
6to4, Teredo, NAT64) and every spelling the resolver takes (``2130706433``, ``127.1``,
``0.0.0.0``, ``[::1]``, ``localhost``). ``http.allowed_hosts`` lists exceptions: a host name
(every address it resolves to is then allowed), an IP address or a CIDR network.

:class:`AddressPolicy` decides; :class:`GuardedTransport` is httpx's own transport (TLS,
HTTP/1.1, pooling) on a network backend that resolves and checks before it connects, so a
refusal happens before any socket is opened. Environment proxies are never used.

Example:
    >>> policy = AddressPolicy(["memory.internal"])
    >>> client = httpx.Client(transport=GuardedTransport(policy))

Resolution runs ``socket.getaddrinfo`` on a small shared pool of resolver threads, only so that
a lookup is bounded by the connect timeout (the system resolver takes none).
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from langgraph_mnemon.config import outbound_host
from langgraph_mnemon.errors import InvalidInputError, ProviderError
from langgraph_mnemon.memory_layers.spaces import provider_refusal

__all__ = ["ALLOWED_HOSTS", "AddressPolicy", "GuardedTransport", "deadline", "is_internal"]

ALLOWED_HOSTS = "http.allowed_hosts"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Bounded: a resolver that hangs holds one of these until the system gives up, never a caller.
_RESOLVERS = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemon-dns")
# The end of the calling thread's current attempt (see deadline()): the guarded streams wait
# at most until then on any read or write, so an attempt is bounded as a whole.
_ATTEMPT = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Bound every read and write of the guarded transport in this thread by ``seconds`` from
    now, as a whole (a server that drips bytes times out at the deadline).

    Example:
        >>> with deadline(5.0):
        ...     client.get(url)
    """
    previous = getattr(_ATTEMPT, "at", None)
    _ATTEMPT.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _ATTEMPT.at = previous


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before this thread's deadline (raises once past it)."""
    at = getattr(_ATTEMPT, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the attempt's time ran out")
    return left if timeout is None else min(timeout, left)


def _embedded(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_internal(ip: IPAddress) -> bool:
    """Whether ``ip`` (or the IPv4 address it wraps) is not a public, routable address.

    Example:
        >>> is_internal(ipaddress.ip_address("::ffff:127.0.0.1")), is_internal(
        ...     ipaddress.ip_address("93.184.215.14"))
        (True, False)
    """
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded(ip)
        if inner is not None and is_internal(inner):
            return True
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_unspecified
        or ip.is_multicast
        or ip.is_reserved
        or not ip.is_global
    )


def _address(text: str) -> IPAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 scope id is not the address


def _name(host: str) -> str:
    return host.strip().strip("[]").lower().removesuffix(".")


class AddressPolicy:
    """Which endpoint hosts the HTTP provider may connect to.

    Args:
        allowed_hosts: ``http.allowed_hosts``: host names, IP addresses or CIDR networks that
            may be internal.

    Raises:
        InvalidInputError: an entry is none of those.
    """

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.names: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in allowed_hosts:
            try:
                value = outbound_host(entry)
            except ValueError as exc:
                raise InvalidInputError(f"{ALLOWED_HOSTS}: {exc}") from None
            try:
                self.networks.append(ipaddress.ip_network(value, strict=False))
            except ValueError:
                self.names.add(value)

    def __repr__(self) -> str:
        allowed = sorted(self.names) + [str(n) for n in self.networks]
        return f"AddressPolicy(allowed_hosts={allowed!r})"

    def _allowed(self, ip: IPAddress) -> bool:
        candidates = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        return any(c in n for c in candidates for n in self.networks if c.version == n.version)

    def refused(self, host: str, addresses: Sequence[str]) -> bool:
        """Whether connecting to ``host`` at ``addresses`` (what it resolved to) is refused:
        some address is internal and neither the name nor that address is allowed."""
        if _name(host) in self.names:
            return False
        for text in addresses:
            try:
                ip = _address(text)
            except ValueError:
                return True  # not an address at all: nothing to connect to safely
            if is_internal(ip) and not self._allowed(ip):
                return True
        return not addresses

    @staticmethod
    def message(host: str) -> str:
        """Why ``host`` is refused, and the setting that would allow it."""
        return (
            f"the endpoint host {_name(host)!r} is, or resolves to, an internal address "
            "(loopback, private, link-local, unspecified or multicast); the server makes no "
            f"requests there unless {ALLOWED_HOSTS} lists it (env MNEMON_HTTP__ALLOWED_HOSTS)"
        )

    def resolve(self, host: str, port: int, timeout: float | None = None) -> list[str]:
        """Every address ``host`` resolves to, once (no connection).

        Raises:
            OSError: the name does not resolve (``socket.gaierror``).
            TimeoutError: not within ``timeout`` seconds.
        """
        lookup = _RESOLVERS.submit(socket.getaddrinfo, _name(host), port, type=socket.SOCK_STREAM)
        try:
            infos = lookup.result(timeout)
        except TimeoutError:
            lookup.cancel()
            raise TimeoutError(f"resolving the host took over {timeout} s") from None
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    def check(self, host: str, port: int) -> None:
        """Refuse (403, code ``internal-address``) a host that resolves to an internal
        address that is not allowed; a name that does not resolve now is left to the
        connection (which checks again). Connects to nothing.

        Raises:
            AuthorityError: the host is refused, with the decision.
        """
        if _name(host) in self.names:
            return
        try:
            addresses = self.resolve(host, port, timeout=10.0)
        except (OSError, TimeoutError, UnicodeError):
            return
        if self.refused(host, addresses):
            raise provider_refusal(
                self.message(host),
                code="internal-address",
                mode="internal-address",
                setting=ALLOWED_HOSTS,
            )


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every wait ends by the calling thread's :func:`deadline`."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        wait = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, wait))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves once, checks every address, connects to a checked address only."""

    def __init__(self, policy: AddressPolicy, inner: httpcore.NetworkBackend) -> None:
        self._policy = policy
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        try:
            addresses = self._policy.resolve(host, port, timeout)
        except TimeoutError:
            raise httpcore.ConnectTimeout("resolving the host timed out") from None
        except (OSError, UnicodeError):
            raise httpcore.ConnectError("the host does not resolve") from None
        if self._policy.refused(host, addresses):
            raise ProviderError(self._policy.message(host), code="internal-address")
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    address,
                    port,
                    timeout=_left(timeout, httpcore.ConnectTimeout),
                    local_address=local_address,
                    socket_options=socket_options,
                )
                return _DeadlineStream(stream)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError("no address to connect to")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise ProviderError("the HTTP provider opens no local socket", code="internal-address")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport whose every connection passes :class:`AddressPolicy` first.

    No environment proxy is used (a proxy would connect where the check cannot see).

    Args:
        policy: Which hosts may be internal.
    """

    def __init__(self, policy: AddressPolicy) -> None:
        super().__init__(trust_env=False)
        self.policy = policy
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_GuardedBackend(policy, httpcore.SyncBackend()),
        )
