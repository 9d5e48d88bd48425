"""``Mnemon``: the composition root. Builds every layer from one :class:`MnemonConfig`."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel, ConfigDict

from langgraph_mnemon.config import MnemonConfig
from langgraph_mnemon.contracts import Usage
from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory

__all__ = ["Mnemon", "RuntimeStatus", "Status"]


class RuntimeStatus(BaseModel):
    """Runtime Memory at a glance."""

    model_config = ConfigDict(frozen=True)

    revision: str
    user: Usage
    memory: Usage
    user_entries: int
    memory_entries: int
    locally_archived: int


class Status(BaseModel):
    """What ``mnemon status`` shows: where data lives and how full each tier is."""

    model_config = ConfigDict(frozen=True)

    root: str
    database_url: str
    write_enabled: bool
    strategy: str
    runtime: RuntimeStatus


class Mnemon:
    """Layered long-term memory for LangGraph agents.

    Example:
        >>> mem = Mnemon.open("./.mnemon")
        >>> mem.runtime.add("memory", "Tests run with `pytest -q`.").status
        'committed'
        >>> mem.status().runtime.memory.used
        26
    """

    def __init__(self, config: MnemonConfig | None = None) -> None:
        if config is not None and not isinstance(config, MnemonConfig):
            raise InvalidInputError(
                f"Mnemon() takes a MnemonConfig (got {type(config).__name__}); "
                "use Mnemon.open(root) for a folder"
            )
        self.config = config or MnemonConfig()
        cfg = self.config
        self.root = cfg.root_path
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.runtime = RuntimeMemory(
            self.root,
            user_root=cfg.global_root_path if cfg.runtime_user_scope == "global" else None,
            user_limit_bytes=cfg.runtime.user_limit_bytes,
            memory_limit_bytes=cfg.runtime.memory_limit_bytes,
            workspace=cfg.workspace_path,
            lock_timeout=cfg.runtime.lock_timeout_seconds,
        )

    @classmethod
    def open(cls, root: str | Path | None = None, **settings: Any) -> Self:
        """Open (or create) a storage root with settings from arguments and ``MNEMON_*`` env.

        ``root`` defaults to ``MNEMON_ROOT`` or ``./.mnemon``.
        """
        if root is not None:
            if not isinstance(root, (str, Path)) or not str(root).strip():
                raise InvalidInputError("root must be a non-empty path")
            settings["root"] = Path(root)
        return cls(MnemonConfig(**settings))

    def status(self) -> Status:
        """Tiers, sizes and revisions."""
        runtime = self.runtime
        return Status(
            root=str(self.root),
            database_url=self.config.resolved_database_url,
            write_enabled=self.config.write_enabled,
            strategy=self.config.strategy,
            runtime=RuntimeStatus(
                revision=runtime.revision,
                user=runtime.usage("user"),
                memory=runtime.usage("memory"),
                user_entries=len(runtime.entries("user")),
                memory_entries=len(runtime.entries("memory")),
                locally_archived=len(runtime.archived("memory")) + len(runtime.archived("user")),
            ),
        )

    def close(self) -> None:
        """Release resources held by the layers (database engines, clients)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Mnemon(root={str(self.root)!r})"
