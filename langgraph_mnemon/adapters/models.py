"""Chat-model resolution for worker graphs.

Worker graphs take a model as a ``"provider:model"`` string, a ready ``BaseChatModel``, or
``None``. ``None`` selects each graph's documented heuristic path, so everything runs offline.

Example:
    >>> resolve_chat_model(None) is None
    True
    >>> model = resolve_chat_model("openai:gpt-4.1-mini")  # needs langchain-openai installed
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models import BaseChatModel

from langgraph_mnemon.errors import InvalidInputError

__all__ = ["ModelSpec", "resolve_chat_model"]

ModelSpec = str | BaseChatModel | None
_SPEC = re.compile(r"^(?P<provider>[A-Za-z0-9_.-]+):(?P<model>\S+)$")


def resolve_chat_model(spec: Any, **kwargs: Any) -> BaseChatModel | None:
    """Return a chat model for ``spec``, or ``None`` for heuristic mode.

    Raises :class:`InvalidInputError` for a malformed spec or when the provider's integration
    package is not installed (the message names the package to install).
    """
    if spec is None:
        return None
    if isinstance(spec, BaseChatModel):
        return spec
    if not isinstance(spec, str):
        raise InvalidInputError(
            f"model must be a 'provider:model' string, a BaseChatModel or None "
            f"(got {type(spec).__name__})"
        )
    match = _SPEC.match(spec.strip())
    if not match:
        raise InvalidInputError(
            f'model must look like "provider:model", e.g. "openai:gpt-4.1-mini" (got {spec!r})'
        )
    from langchain.chat_models import init_chat_model

    provider, name = match["provider"], match["model"]
    try:
        return init_chat_model(name, model_provider=provider, **kwargs)
    except ImportError as exc:
        package = f"langchain-{provider.replace('_', '-')}"
        raise InvalidInputError(
            f"chat model {spec!r} needs its integration package: pip install {package} ({exc})"
        ) from None
    except Exception as exc:  # e.g. the integration's own "no API key" error
        raise InvalidInputError(
            f"cannot build chat model {spec!r}: {type(exc).__name__}: {exc}"
        ) from None
