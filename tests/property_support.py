"""Hypothesis settings shared by the property tests."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def fixed_settings(max_examples: int) -> settings:
    """``max_examples`` derandomized examples (a failure reproduces on every run), no deadline."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
