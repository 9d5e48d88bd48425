"""MnemonConfig: defaults, environment, and errors that name the key and the range."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_mnemon import MnemonConfig
from langgraph_mnemon.errors import InvalidInputError


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MNEMON_ROOT", "MNEMON_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    cfg = MnemonConfig()
    assert cfg.root == Path(".mnemon")
    assert cfg.resolved_database_url == f"sqlite:///{Path('.mnemon').absolute() / 'mnemon.db'}"
    assert (cfg.runtime.user_limit_bytes, cfg.runtime.memory_limit_bytes) == (4096, 10240)
    assert (cfg.documents.body_limit_bytes, cfg.documents.active_limit_bytes) == (
        2 * 1024 * 1024,
        10 * 1024 * 1024,
    )
    assert cfg.recall_quality.policy == "strict-v1"
    assert (cfg.recall_quality.low_score_threshold, cfg.recall_quality.high_score_threshold) == (
        0.25,
        0.6,
    )
    assert cfg.recall_quality.candidate_multiplier == 3
    assert (cfg.recall_quality.max_medium_results, cfg.recall_quality.max_unknown_results) == (4, 2)
    vb = cfg.view_budget
    assert (
        vb.max_projection_characters,
        vb.max_routes,
        vb.max_actions,
        vb.max_evidence_results,
        vb.max_evidence_characters,
    ) == (16384, 16, 16, 20, 16384)
    ir = cfg.idle_review
    assert (ir.enabled, ir.delay_ms, ir.min_interval_ms, ir.max_per_thread) == (
        True,
        30_000,
        300_000,
        20,
    )
    assert (ir.max_context_chars, ir.max_tokens, ir.runtime_memory) == (24_000, 4096, True)
    assert (cfg.recall_mode, cfg.writeback_mode) == ("guided", "guided")
    assert cfg.lifecycle_enabled
    assert cfg.routing_guidance
    assert cfg.write_enabled
    assert cfg.strategy == "layered"
    assert cfg.worker_model is None
    assert cfg.runtime_user_scope == "storage"
    assert cfg.default_recall_limit == 10
    assert cfg.timeout_ms == 10_000
    assert cfg.layers.memory_spaces.participation.recall == "automatic"


def test_environment_and_nested_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MNEMON_ROOT", str(tmp_path / "r"))
    monkeypatch.setenv("MNEMON_RUNTIME__USER_LIMIT_BYTES", "8192")
    monkeypatch.setenv("MNEMON_STRATEGY", "general")
    monkeypatch.setenv("MNEMON_WRITE_ENABLED", "false")
    monkeypatch.setenv("MNEMON_WORKER_MODEL", "openai:gpt-4.1-mini")
    monkeypatch.setenv("MNEMON_DATABASE_URL", "postgresql+psycopg://u:p@localhost/db")
    cfg = MnemonConfig()
    assert cfg.root_path == tmp_path / "r"
    assert cfg.runtime.user_limit_bytes == 8192
    assert cfg.strategy == "general"
    assert cfg.write_enabled is False
    assert cfg.worker_model == "openai:gpt-4.1-mini"
    assert cfg.resolved_database_url == "postgresql+psycopg://u:p@localhost/db"
    # Arguments win over the environment.
    assert MnemonConfig(strategy="layered").strategy == "layered"


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"runtime": {"user_limit_bytes": 0}}, ["runtime.user_limit_bytes", "1..1048576"]),
        (
            {"runtime": {"memory_limit_bytes": 1_048_577}},
            ["runtime.memory_limit_bytes", "1..1048576", "MNEMON_RUNTIME__MEMORY_LIMIT_BYTES"],
        ),
        ({"default_recall_limit": 51}, ["default_recall_limit", "1..50"]),
        ({"timeout_ms": 99}, ["timeout_ms", "100..120000"]),
        ({"idle_review": {"delay_ms": 1000}}, ["idle_review.delay_ms", "5000..600000"]),
        ({"idle_review": {"max_per_thread": 201}}, ["idle_review.max_per_thread", "0..200"]),
        ({"recall_quality": {"candidate_multiplier": 6}}, ["candidate_multiplier", "1..5"]),
        ({"recall_quality": {"policy": "loose"}}, ["recall_quality.policy", "strict-v1"]),
        (
            {"recall_quality": {"low_score_threshold": 0.7}},
            ["low_score_threshold must be below high_score_threshold"],
        ),
        ({"view_budget": {"max_routes": 129}}, ["view_budget.max_routes", "1..128"]),
        ({"strategy": "flat"}, ["strategy", "layered | general"]),
        ({"recall_mode": "auto"}, ["recall_mode", "guided | off"]),
        ({"worker_model": "gpt-4"}, ["worker_model", "provider:model"]),
        ({"bogus_key": 1}, ["bogus_key", "is not a known setting"]),
        ({"runtime": {"nope": 1}}, ["runtime.nope", "is not a known setting"]),
    ],
)
def test_out_of_range_values_name_key_and_range(kwargs: dict, fragments: list[str]) -> None:
    with pytest.raises(InvalidInputError) as info:
        MnemonConfig(**kwargs)
    message = str(info.value)
    assert message.startswith("invalid mnemon configuration: ")
    for fragment in fragments:
        assert fragment in message
    assert info.value.code == "invalid-config"


def test_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMON_RUNTIME__USER_LIMIT_BYTES", "lots")
    with pytest.raises(InvalidInputError, match="MNEMON_RUNTIME__USER_LIMIT_BYTES"):
        MnemonConfig()


def test_secrets_are_not_shown() -> None:
    cfg = MnemonConfig(embedding={"api_key": "sk-secret"}, remote_token="tok-secret")
    assert "sk-secret" not in repr(cfg)
    assert "tok-secret" not in str(cfg.model_dump())
