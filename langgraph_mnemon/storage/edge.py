"""The async edge of a synchronous service: ``aX`` is ``X`` run in a worker thread.

Services are synchronous inside (DESIGN: one sync/async rule). An async caller reaches a
method through :func:`asyncio.to_thread` once, at the service's edge; :func:`async_form`
writes that edge from the sync method, so the pair keeps one signature, one docstring and one
body (``inspect.signature`` and type checkers see the sync method's parameters). The caller's
context variables (the run, the scope, the kernel's trigger) travel with the call.

Example:
    >>> class Service:
    ...     def answer(self, x: int) -> int:
    ...         return x * 2
    ...     aanswer = async_form(answer)
    >>> asyncio.run(Service().aanswer(21))
    42
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["async_form"]

_S = TypeVar("_S")
_P = ParamSpec("_P")
_T = TypeVar("_T")


def async_form(
    method: Callable[Concatenate[_S, _P], _T],
) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _T]]:
    """The async form of a sync method: the same call, run in a worker thread.

    Args:
        method: A synchronous method (its first parameter is ``self``).

    Returns:
        An ``async def`` method with the same parameters, named ``a<name>``, whose docstring
        points at ``method``; it calls ``self.<name>`` (so an override in a subclass counts).
    """

    name = method.__name__

    @functools.wraps(method)
    async def run(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        # Looked up on the instance at call time: a subclass's (or a patched) ``name`` is the
        # one the async form runs, as ``self.name(...)`` would be.
        return await asyncio.to_thread(getattr(self, name), *args, **kwargs)

    run.__name__ = f"a{method.__name__}"
    run.__qualname__ = f"{method.__qualname__.rpartition('.')[0]}.a{method.__name__}".lstrip(".")
    run.__doc__ = (
        f"Async form of :meth:`{method.__name__}`: the same call, run in a worker thread "
        f"(``asyncio.to_thread``)."
    )
    return run
