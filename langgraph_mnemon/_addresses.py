"""Addresses in settings: host names, outbound hosts, Chroma servers, browser origins, folders.

Each check returns the normal form or raises ``ValueError`` (pydantic turns it into the
setting's error); :func:`chroma_server` raises :class:`InvalidInputError` for CLI flags.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict
from pydantic_settings import NoDecode

from ._redaction import redact_url
from .errors import InvalidInputError


def is_address(value: str) -> bool:
    """Whether ``value`` is more than a host name: a URL, ``host:port``, a path."""
    try:
        ipaddress.ip_address(value.strip().strip("[]"))
    except ValueError:
        return any(ch in value for ch in ":/@\\")
    return False


class ChromaServer(BaseModel):
    """A Chroma server address parsed by :func:`chroma_server`."""

    model_config = ConfigDict(frozen=True)

    host: str
    port: int
    ssl: bool = False
    scheme: str = ""  # "http", "https", or "" for the HOST:PORT form


_CHROMA_FORMS = "HOST:PORT or http(s)://HOST:PORT, e.g. 127.0.0.1:8000"


def chroma_server(value: str, *, name: str = "--chroma") -> ChromaServer:
    """Parse a Chroma server address: ``HOST:PORT`` or ``http(s)://HOST:PORT`` (https = ssl).

    A folder, a path or query after the port, a missing port, credentials (``user:pass@``;
    give ``chroma.token`` instead) or any other scheme raise :class:`InvalidInputError`
    naming ``name`` (the option or setting) and the accepted forms.

    Example:
        >>> chroma_server("http://127.0.0.1:58123")
        ChromaServer(host='127.0.0.1', port=58123, ssl=False, scheme='http')
        >>> chroma_server("chroma.internal:8000").ssl
        False
    """
    text = value.strip() if isinstance(value, str) else ""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    # The message shows the value, never a password in it.
    shown = redact_url(text) if sep else redact_url(f"x://{text}").removeprefix("x://")

    def refuse(why: str) -> InvalidInputError:
        return InvalidInputError(f"{name} must be {_CHROMA_FORMS} (got {shown!r}: {why})")

    if scheme.lower() not in ("", "http", "https"):
        raise refuse(f"{scheme}:// is not a Chroma server scheme; use http or https")
    location = rest[:-1] if sep and rest.endswith("/") else rest
    if "@" in location:
        raise refuse("no user:password@ in the address; set the token with MNEMON_CHROMA__TOKEN")
    if not sep and text[:1] in ("/", ".", "~"):
        raise refuse("a folder is not a server; a local folder is MNEMON_CHROMA__PATH")
    if any(ch in location for ch in "/?#\\"):
        raise refuse("give only the host and the port, no path or query")
    host_part, colon, port_part = location.rpartition(":")
    if not colon or not port_part:
        raise refuse("the port is missing")
    if not port_part.isdigit() or not 1 <= int(port_part) <= 65535:
        raise refuse("the port must be a number from 1 to 65535")
    try:
        host = host_name(host_part)
    except ValueError:
        raise refuse("not a host name or IP address before the port") from None
    scheme = scheme.lower()
    return ChromaServer(host=host, port=int(port_part), ssl=scheme == "https", scheme=scheme)


# --- end Memory Spaces -----------------------------------------------------------------------


# --- control plane: lists from the environment, Host names and origins -------------------

EnvList = Annotated[list[str], NoDecode]
"""A list setting: from the environment as comma-separated text or a JSON list."""

_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def env_list(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError(
                "is not a JSON list; give a comma-separated list (a,b) or a JSON list"
            ) from None
    return [part.strip() for part in text.split(",") if part.strip()]


def host_name(value: str) -> str:
    """``value`` as a Host name to compare: lower case, IPv6 without brackets, no port.

    Raises ``ValueError`` when it is neither a DNS name nor an IP address.
    """
    name = value.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        pass
    if not _HOSTNAME.match(name):
        raise ValueError(
            f"{value!r} is not a host name or IP address (give the name only, without scheme "
            "or port, e.g. mnemon.internal)"
        )
    return name


def outbound_host(value: str) -> str:
    """An ``http.allowed_hosts`` entry: a host name (no trailing dot), IP address or CIDR
    network, normalised; ``ValueError`` when it is none of them."""
    text = value.strip() if isinstance(value, str) else ""
    if "/" in text and "://" not in text:
        try:
            return ipaddress.ip_network(text, strict=False).with_prefixlen
        except ValueError:
            raise ValueError(f"{value!r} is not a CIDR network (e.g. 10.0.0.0/8)") from None
    return host_name(text.removesuffix("."))


def absolute_folder(value: str) -> str:
    folder = Path(value).expanduser()
    if not folder.is_absolute() or ".." in folder.parts:
        raise ValueError(f"{value!r} is not an absolute folder path without '..'")
    return os.path.normpath(folder)


def normalize_origin(value: str) -> str:
    """A browser origin as ``scheme://host[:port]`` (default port dropped, lower case).

    Raises ``ValueError`` for anything that is not an http(s) origin.
    """
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(
            f"{value!r} is not an origin; give scheme://host[:port], e.g. https://mnemon.internal"
        )
    host = host_name(parts.hostname)
    if ":" in host:
        host = f"[{host}]"
    shown_port = "" if port in (None, _DEFAULT_PORTS[parts.scheme]) else f":{port}"
    return f"{parts.scheme}://{host}{shown_port}"
