"""Hypothesis settings and a forced boundary digest shared by the property and fence tests."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, settings


def fixed_settings(max_examples: int) -> settings:
    """``max_examples`` derandomized examples (a failure reproduces on every run), no deadline."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


FORCED_DIGEST = "abcdefabcdef"


def force_first_boundary(monkeypatch: pytest.MonkeyPatch) -> str:
    """Make the first (salt 0) boundary digest :data:`FORCED_DIGEST`, so a text can hold it;
    re-salted digests stay real. Returns the forced boundary."""
    from langgraph_mnemon.memory_layers import boundary

    real = hashlib.sha256

    class FirstDigestForced:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def hexdigest(self) -> str:
            if self.data.startswith(b"[0,"):
                return FORCED_DIGEST + "0" * 52
            return real(self.data).hexdigest()

    monkeypatch.setattr(boundary.hashlib, "sha256", FirstDigestForced)
    return FORCED_DIGEST
