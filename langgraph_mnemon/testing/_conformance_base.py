"""What every conformance check shares: its context, its outcomes and small helpers.

A check is ``def check(ctx: Context) -> str`` returning a detail line. It calls the provider
synchronously, through :func:`settle`, so a provider written with ``async def`` methods is
checked the same way the host calls it. It fails by
raising :class:`CheckFailed` (``expect`` does it), reports an undeclared capability with
:class:`NotDeclared` and a check it cannot run with :class:`NotRun`; any other exception is a
failure that names its type.
"""

from __future__ import annotations

import contextvars
import math
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph_mnemon.memory_layers.spaces import (
    BrowseRequest,
    MemoryProvider,
    MemoryRecord,
    ProviderDescriptor,
    ProviderSearchRequest,
    RememberItem,
    SpaceBinding,
    is_committed,
    is_pending,
    settle,
)

__all__ = [
    "CheckFailed",
    "Context",
    "NotDeclared",
    "NotRun",
    "bounded",
    "expect",
    "finite",
    "made",
    "receipt_id",
    "short",
]

Factory = Callable[[], "MemoryProvider | Awaitable[MemoryProvider]"]
T = TypeVar("T")


class CheckFailed(Exception):
    """The provider broke the contract; the message says how."""


class NotDeclared(Exception):
    """The descriptor does not declare the capability this check covers."""


class NotRun(Exception):
    """The check cannot run with this harness (the message says what is missing)."""


def expect(condition: object, message: str) -> None:
    """Fail the running check with ``message`` unless ``condition`` holds."""
    if not condition:
        raise CheckFailed(message)


def short(value: Any, limit: int = 160) -> str:
    """A one-line, bounded ``repr`` for failure messages (text itself for a string)."""
    text = " ".join((value if isinstance(value, str) else repr(value)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bounded(call: Callable[[], T], seconds: float, name: str = "cf-check") -> T:
    """``call()`` in a worker thread, waited for at most ``seconds``; its result or error.

    The thread is a daemon: a provider call that hangs past its bound is left behind (it
    cannot be interrupted) and never holds the suite or the interpreter's exit back.

    Raises:
        TimeoutError: ``call`` did not return within ``seconds``.
    """
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the caller's I/O recording follows the call

    def run() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"did not return within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def made(factory: Factory) -> MemoryProvider:
    """Call a harness factory (sync or async) and return its provider."""
    return settle(factory())  # type: ignore[no-any-return]


@dataclass
class Context:
    """One check's view of the provider under test (a fresh provider per check)."""

    provider: MemoryProvider
    config: Mapping[str, Any]
    secrets: Mapping[str, str]
    settle_hook: Callable[[], Awaitable[None] | None] | None
    make_down: Factory | None
    opened: list[MemoryProvider] = field(default_factory=list)

    @property
    def descriptor(self) -> ProviderDescriptor:
        return self.provider.descriptor

    def declares(self, capability: str) -> bool:
        return bool(getattr(self.descriptor.capabilities, capability, False))

    def require(self, *capabilities: str) -> None:
        """Raise :class:`NotDeclared` unless every capability is declared."""
        missing = [c for c in capabilities if not self.declares(c)]
        if missing:
            raise NotDeclared(f"the descriptor does not declare {', '.join(missing)}")

    def require_writes(self) -> None:
        """Checks that need rows can only seed them through ``remember``."""
        if not self.declares("remember"):
            raise NotRun("the provider declares no remember, so the suite cannot seed rows")

    @property
    def exact(self) -> bool:
        return self.descriptor.write_mode == "exact"

    def space(self, label: str = "conformance", provider: MemoryProvider | None = None) -> Any:
        """A binding for a fresh, random space id, configured the way the host would."""
        provider = provider or self.provider
        space_id = f"cf-{label}-{uuid.uuid4().hex[:12]}"
        checked = provider.check_config(dict(self.config), dict(self.secrets))
        config = provider.place(space_id, dict(checked))
        return SpaceBinding(
            id=space_id, name=f"Conformance {label}", config=config, secrets=dict(self.secrets)
        )

    def settle(self) -> None:
        """Wait for ``write_mode="async"`` writes (a no-op for exact providers)."""
        if self.exact:
            return
        if self.settle_hook is None:
            raise CheckFailed(
                "the provider declares write_mode='async' but the harness has no settle(); "
                "give ProviderHarness(settle=...) that waits until accepted writes are visible"
            )
        settle(self.settle_hook())

    def write(
        self, space: SpaceBinding, contents: Sequence[str | RememberItem]
    ) -> list[dict[str, Any]]:
        """Remember each content one by one; exact providers must commit every write."""
        receipts = []
        for content in contents:
            item = content if isinstance(content, RememberItem) else RememberItem(content=content)
            raw = settle(self.provider.remember(space, item))
            expect(isinstance(raw, Mapping), f"remember returned {short(raw)}, not a dict")
            if self.exact:
                expect(is_committed(raw), f"an exact write was not committed: {short(raw)}")
                expect(_rid(raw), f"a committed receipt carries no id: {short(raw)}")
            else:
                expect(
                    is_committed(raw) or is_pending(raw) or _skipped(raw),
                    f"an async write was neither committed nor pending: {short(raw)}",
                )
            receipts.append(dict(raw))
        self.settle()
        return receipts

    def search(
        self, space: SpaceBinding, query: str, mode: str = "smart", **kwargs: Any
    ) -> list[MemoryRecord]:
        request = ProviderSearchRequest(query=query, mode=mode, **kwargs)  # type: ignore[arg-type]
        result = settle(self.provider.search(space, request))
        rows = list(result.results)
        expect(
            all(isinstance(r, MemoryRecord) for r in rows), "search returned non-MemoryRecord rows"
        )
        return rows

    def browse(self, space: SpaceBinding, **kwargs: Any) -> list[MemoryRecord]:
        rows = list(settle(self.provider.browse(space, BrowseRequest(**kwargs))))
        expect(
            all(isinstance(r, MemoryRecord) for r in rows), "browse returned non-MemoryRecord rows"
        )
        return rows

    def visible(self, space: SpaceBinding, content: str) -> list[MemoryRecord]:
        """Rows with exactly ``content`` that browse (when declared) or search shows."""
        if self.declares("browse"):
            rows = self.browse(space, limit=500)
        else:
            rows = self.search(space, content, limit=50)
        return [r for r in rows if r.content == content]


def _rid(raw: Mapping[str, Any]) -> str | None:
    value = raw.get("id")
    return str(value) if value is not None and str(value).strip() else None


def _skipped(raw: Mapping[str, Any]) -> bool:
    return any(
        isinstance(raw.get(k), str) and raw[k].strip().lower() == "skipped"
        for k in ("status", "action", "state")
    )


def receipt_id(raw: Mapping[str, Any]) -> str | None:
    """The id a raw receipt names (what the host shows as ``MemoryReceipt.id``)."""
    return _rid(raw)


def finite(value: Any) -> bool:
    """Whether ``value`` is a real, finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
