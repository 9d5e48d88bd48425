"""The one sync/async rule: the logic is async, sync twins wait on the service's own loop.

Used by Memory Spaces (whose providers are async-only) and the store facade. Every operation
is written once, as the coroutine of its async method (``asearch``, ``aremember``,
``abatch``, …). Blocking local I/O inside it (the SQL
catalog, the secrets file) goes through ``asyncio.to_thread``: an async caller's loop (the
LangGraph server's) never waits on the disk. Each sync method is a thin twin that hands that
same coroutine to the service's own event loop, kept in a private daemon thread, and blocks
until it is done: the pattern of the sync methods of LangGraph's ``AsyncPostgresSaver``.

So sync calls work from scripts, from worker threads (sync tools) and from notebook cells whose
thread already runs a loop (that loop is not the service's). The one place a sync call cannot
work is the service's own loop, e.g. a provider calling back into the sync API: it would wait
for itself forever, so it raises :class:`SyncCallOnLoopError` naming the async method instead.

:func:`sync_twin` writes a sync method from its async one, so no pair can drift apart: same
parameters, same validation, same kernel decision (the caller's context travels along).

Example:
    >>> class Service:
    ...     def __init__(self) -> None:
    ...         self._runner = LoopRunner("service-sync")
    ...     async def aanswer(self, x: int) -> int:
    ...         return x * 2
    ...     answer = sync_twin(aanswer)
    >>> Service().answer(21)
    42
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from langgraph_mnemon.errors import SyncCallOnLoopError

__all__ = ["LoopRunner", "SyncCallOnLoopError", "sync_doc", "sync_twin"]

_T = TypeVar("_T")
_P = ParamSpec("_P")


class LoopRunner:
    """One private event loop in a daemon thread that runs the coroutines of sync calls.

    The loop starts on first use and again after :meth:`close`. The caller's context variables
    (the kernel's trigger) travel with each coroutine.

    Args:
        name: The thread's name (shown in stack dumps).
        owner: How the message of a refused call names the object (``spaces``).
        service: How it names the service (``Memory Spaces``).
    """

    def __init__(self, name: str, owner: str = "spaces", service: str = "Memory Spaces") -> None:
        self._name = name
        self._owner = owner
        self._service = service
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    ready.set()
                    loop.run_forever()

                thread = threading.Thread(target=serve, name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def on_own_loop(self) -> bool:
        """Whether the calling code runs on this runner's loop (its thread)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, _T], async_name: str) -> _T:
        """Run ``coro`` on the private loop and wait for its result (or its exception).

        Raises:
            SyncCallOnLoopError: called on the private loop itself; ``coro`` is closed unrun
                and the message names ``async_name``, the method to await instead.
        """
        if self.on_own_loop():
            coro.close()
            raise SyncCallOnLoopError(
                f"{self._owner}.{async_name[1:]}() was called on the event loop of "
                f"{self._service}, where a sync call would wait for itself forever; use the async "
                f"method there: await {self._owner}.{async_name}(...)"
            )
        loop = self._start()
        future: Future[_T] = asyncio.run_coroutine_threadsafe(coro, loop)
        return future.result()

    def close(self) -> None:
        """Stop the loop and its thread (a later :meth:`run` starts a new one)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()


class _Runs(Protocol):
    """An object whose sync twins run on its ``_runner``."""

    _runner: LoopRunner


_S = TypeVar("_S", bound=_Runs)


_SECTION = re.compile(r"^(Args|Returns|Raises|Example|Examples):\s*$")


def _unawait(text: str, async_name: str) -> str:
    """``text`` with each awaited call of ``async_name`` written as the sync call.

    ``(await spaces.asearch(q)).results`` becomes ``spaces.search(q).results`` and
    ``await spaces.aremember(x)`` becomes ``spaces.remember(x)``; other awaits stay.
    """
    call = re.escape(f".{async_name}(")
    sync_call = f".{async_name[1:]}("
    wrapped = re.compile(r"\(await\s+([\w.\[\]]+)" + call)
    while match := wrapped.search(text):
        depth, end = 1, match.end()
        while end < len(text) and depth:  # the parenthesis that closes ``(await``
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        if depth:  # unbalanced: leave the text as it is
            break
        inner = match.group(1) + sync_call + text[match.end() : end - 1]
        text = text[: match.start()] + inner + text[end:]
    return re.sub(r"await\s+([\w.\[\]]+)" + call, lambda m: m.group(1) + sync_call, text)


def _with_raise(lines: list[str], entry: list[str]) -> list[str]:
    """``lines`` (a cleaned docstring) with ``entry`` appended to its ``Raises:`` section, or
    with a ``Raises:`` section holding it before ``Example:`` (or at the end)."""
    headers = [i for i, line in enumerate(lines) if _SECTION.match(line)]
    raises = next((i for i in headers if lines[i].startswith("Raises")), None)
    if raises is not None:
        after = [i for i in headers if i > raises]
        end = after[0] if after else len(lines)
        while end > raises + 1 and not lines[end - 1].strip():
            end -= 1
        return lines[:end] + entry + lines[end:]
    example = next((i for i in headers if lines[i].startswith("Example")), len(lines))
    head = lines[:example]
    while head and not head[-1].strip():
        head.pop()
    tail = ["", *lines[example:]] if example < len(lines) else []
    return [*head, "", "Raises:", *entry, *tail]


def sync_doc(doc: str | None, async_name: str, owner: str = "spaces") -> str:
    """The docstring of the sync twin of ``async_name``: the async method's own, adapted.

    The summary, arguments and return value are the async method's; a note says how the twin
    runs, its examples call the sync method without ``await``, and ``Raises:`` gains
    :class:`SyncCallOnLoopError` (the one error only the sync twin raises).

    Args:
        doc: The async method's docstring (``None`` when it has none).
        async_name: The async method's name (``asearch``).
        owner: How examples name the service (``spaces``).

    Returns:
        The cleaned (dedented) docstring of the sync twin.

    Example:
        >>> sync_doc(">>> (await spaces.asearch('q')).results", "asearch").splitlines()[0]
        ">>> spaces.search('q').results"
    """
    text = inspect.cleandoc(doc or f"Sync twin of :meth:`{async_name}`.")
    lines = _unawait(text, async_name).splitlines()
    summary_end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    lines[summary_end:summary_end] = [
        "",
        f"The sync twin of :meth:`{async_name}`: it runs the same coroutine on the service's",
        "private event-loop thread and waits for it (scripts, worker threads, notebook cells).",
    ]
    retry = f"await ``{owner}.{async_name}(...)`` there."
    entry = [
        "    SyncCallOnLoopError: called on the service's own event loop (a provider calling",
        f"        back), where it would wait for itself; {retry}",
    ]
    return "\n".join(_with_raise(lines, entry))


def sync_twin(
    async_method: Callable[Concatenate[_S, _P], Coroutine[Any, Any, _T]],
) -> Callable[Concatenate[_S, _P], _T]:
    """The sync method of ``async_method`` (``aname`` → ``name``): it runs the coroutine on
    the instance's ``_runner`` and returns its result; same signature (``inspect`` follows
    ``__wrapped__``) and typing, and the async method's docstring adapted by :func:`sync_doc`.

    Args:
        async_method: The ``async def`` method whose name starts with ``a``.

    Returns:
        The sync method, to assign in the class body under the name without the ``a``.

    Example:
        >>> search = sync_twin(asearch)   # inside the class body, after ``asearch``
    """
    async_name = async_method.__name__

    @functools.wraps(async_method)
    def method(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        # Looked up on the instance, so a patched ``aname`` is the one both twins run.
        return self._runner.run(getattr(self, async_name)(*args, **kwargs), async_name)

    owner = async_method.__qualname__.rpartition(".")[0]
    method.__name__ = async_name[1:]
    method.__qualname__ = f"{owner}.{method.__name__}" if owner else method.__name__
    method.__doc__ = sync_doc(async_method.__doc__, async_name)
    return method
