"""Memory Space secrets: kept host-side only, in ``<root>/state/space-secrets.json`` (0600).

Provider credentials (API keys, tokens) never enter the catalog table or any read API; each
call hands them to the provider, and a space reports only which keys are configured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from langgraph_mnemon.errors import StorageError
from langgraph_mnemon.storage.files import atomic_write, ensure_dir, locked, refuse_symlink

__all__ = ["SecretStore"]


class SecretStore:
    """``{space_id: {key: value}}`` in one JSON file of mode 0600, written atomically."""

    def __init__(self, path: Path, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._lock_path = path.with_name(".space-secrets.lock")

    def _refuse_links(self) -> None:
        # Managed paths under the root are never followed through a symbolic link.
        refuse_symlink(self.path.parent, "Memory Space state folder")
        refuse_symlink(self.path, "Memory Space secrets file")

    def _read(self) -> dict[str, dict[str, str]]:
        self._refuse_links()
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError.from_os_error(
                exc, "read the Memory Space secrets", self.path
            ) from None
        except ValueError as exc:
            raise StorageError(
                f"cannot read the Memory Space secrets file {self.path}: {exc}; restore it or "
                "remove it and configure the secrets again",
                code="storage-damaged",
            ) from None
        if not isinstance(data, dict):
            raise StorageError(f"the Memory Space secrets file {self.path} is not a JSON object")
        return {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}

    def get(self, space_id: str) -> dict[str, str]:
        return dict(self._read().get(space_id, {}))

    def keys(self) -> dict[str, list[str]]:
        return {k: sorted(v) for k, v in self._read().items()}

    def put(self, space_id: str, secrets: Mapping[str, str] | None) -> None:
        self._refuse_links()
        ensure_dir(self.path.parent)
        with locked(self._lock_path, timeout=self.lock_timeout, what="Memory Space secrets"):
            data = self._read()
            if secrets:
                data[space_id] = dict(secrets)
            else:
                data.pop(space_id, None)
            atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True).encode())
