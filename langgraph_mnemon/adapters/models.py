"""Chat models: resolution for worker graphs, and the context window a model declares.

Worker graphs take a model as a ``"provider:model"`` string, a ready ``BaseChatModel``, or
``None``. ``None`` selects each graph's documented heuristic path, so everything runs offline.
:func:`model_window` reads the window Mnemos measures token use against from the model's
``profile`` (LangChain's ``ModelProfile``, key ``max_input_tokens``).

Example:
    >>> resolve_chat_model(None) is None
    True
    >>> model = resolve_chat_model("openai:gpt-4.1-mini")  # needs langchain-openai installed
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from langgraph_mnemon.config import MnemosConfig
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.mnemos import ContextWindow, choose_window

__all__ = [
    "ModelSpec",
    "check_window_model",
    "declared_window",
    "model_window",
    "resolve_chat_model",
]

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


_MAX_DECLARED = 100_000_000


def declared_window(model: Any) -> int | None:
    """The input window ``model``'s profile declares (``max_input_tokens``), or ``None``.

    A model bound with ``bind_tools`` reads its bound model's profile. A model without a
    profile, a profile that is not a mapping, or a value that is no positive whole number
    declares nothing.

    Example:
        >>> declared_window(ScriptedChatModel(profile={"max_input_tokens": 8000}))
        8000
    """
    try:
        profile = getattr(model, "profile", None)
    except Exception:  # an odd object whose attribute access raises: it declares nothing
        return None
    if not isinstance(profile, Mapping):
        return None
    value = profile.get("max_input_tokens")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_DECLARED:
        return None
    return value


def model_window(model: Any, config: MnemosConfig) -> ContextWindow:
    """The window of a reading taken before a call of ``model``.

    ``mnemos.context_window`` when set, else the model's profile (``max_input_tokens``), else
    the default ``mnemos.context_window_tokens``.

    Args:
        model: the chat model about to be called (any object: one without a profile declares
            no window).
        config: the Mnemos settings.

    Returns:
        The :class:`~langgraph_mnemon.memory_layers.mnemos.ContextWindow` with its source.

    Example:
        >>> model_window(ChatOpenAI(model="gpt-4.1"), MnemosConfig()).label  # doctest: +SKIP
        '1,047,576 tokens (model profile)'
    """
    declared = declared_window(model)
    profile = ContextWindow(tokens=declared, source="model profile") if declared else None
    return choose_window(config, profile)


def check_window_model(model: Any) -> Any:
    """``model`` when it is ``None`` or a LangChain runnable (a chat model, or one from
    ``bind_tools``), for an argument naming the model whose window Mnemos uses.

    Raises:
        InvalidInputError: anything else.

    Example:
        >>> check_window_model(None) is None
        True
    """
    if model is None or isinstance(model, Runnable):
        return model
    raise InvalidInputError(
        f"model must be the LangChain chat model the agent calls (a BaseChatModel, or one "
        f"from bind_tools) or None (got {type(model).__name__}); Mnemos reads its context "
        "window from model.profile['max_input_tokens']"
    )
