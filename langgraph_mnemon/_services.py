"""How the host opens its shared services: the database and the Memory Spaces service.

The host (:mod:`langgraph_mnemon.host`) builds them on first use and hands them down; what
each needs from the configuration is read here, once, so the host stays the composition root
without carrying the construction details.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.storage.db import (
    Database,
    create_engine,
    ensure_sqlite_directory,
    read_only_media_url,
    refuse_linked_sqlite,
)
from langgraph_mnemon.storage.secret_box import SecretBox

if TYPE_CHECKING:
    from langgraph_mnemon.memory_layers.kernel import Kernel
    from langgraph_mnemon.memory_layers.spaces import MemorySpaces

__all__ = ["open_database", "open_spaces", "secret_box"]


def open_database(config: MnemonConfig, root: Path) -> Database:
    """The shared SQL database of ``config`` (``resolved_database_url``).

    The embedded ``<root>/mnemon.db`` is refused when it (or a companion file) is a symbolic
    link; a ``database_url`` the user names is opened as given. With ``write_enabled=false``
    nothing is created, and a file on read-only media is opened immutable.

    Raises:
        StorageError: the embedded file is a link, or its folder cannot be created.
        InvalidInputError: the URL cannot be parsed.
    """
    url = config.resolved_database_url
    if config.database_url is None:
        refuse_linked_sqlite(root / "mnemon.db")
    if config.write_enabled:
        ensure_sqlite_directory(url)
    else:  # a file on read-only media is still readable
        url = read_only_media_url(url)
    engine = create_engine(
        url,
        busy_timeout_ms=config.mnemos.sqlite_busy_timeout_ms,
        sqlite_synchronous=config.mnemos.sqlite_synchronous,
    )
    return Database(engine, owns_engine=True, read_only=not config.write_enabled)


def secret_box(config: MnemonConfig) -> SecretBox:
    """The keys Memory Space secrets are sealed with (``secret_key``, ``secret_key_previous``)."""

    def text(value: object) -> str | None:
        return None if value is None else value.get_secret_value()  # type: ignore[attr-defined]

    return SecretBox(text(config.secret_key), text(config.secret_key_previous))


def open_spaces(
    config: MnemonConfig, database: Database, kernel: Kernel, root: Path
) -> MemorySpaces:
    """The Memory Spaces service of ``config``: its providers, quality policy, limits and the
    secret keys, on ``database``, asking ``kernel``."""
    from langgraph_mnemon.adapters.providers import configured_providers
    from langgraph_mnemon.memory_layers.spaces import MemorySpaces, QualitySettings

    quality = config.recall_quality
    return MemorySpaces(
        database,
        root=root,
        providers=configured_providers(config, database),
        quality=QualitySettings(
            low_score_threshold=quality.low_score_threshold,
            high_score_threshold=quality.high_score_threshold,
            max_medium_results=quality.max_medium_results,
            max_unknown_results=quality.max_unknown_results,
        ),
        policy=quality.policy,
        candidate_multiplier=quality.candidate_multiplier,
        default_limit=config.default_recall_limit,
        timeout_ms=config.timeout_ms,
        kernel=kernel,
        default_provider_id=config.persistence_strategy.provider_id,
        local_only=config.persistence_strategy.rules.data_boundary == "local-only",
        lock_timeout=config.runtime.lock_timeout_seconds,
        secret_box=secret_box(config),
    )
