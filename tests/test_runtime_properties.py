"""Property tests: byte accounting, revisions and rejected operations over random op sequences."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_mnemon.errors import MnemonError
from langgraph_mnemon.memory_layers.runtime import RuntimeMemory

WORDS = ["tea", "uv", "deploy", "中文", "记住", "😀", "naïve", "x", "pytest -q", "rule"]
LIMITS = {"user": 40, "memory": 60}

clean = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
bad = st.sampled_from(["", "  \t ", "a § b", "x" * 9000])
text = st.one_of(clean, clean, clean, clean, bad)
# An int picks a piece of an existing entry (so replace / remove usually match); text may not.
old_text = st.one_of(st.integers(0, 1000), st.integers(0, 1000), text)
importance = st.sampled_from(["critical", "normal", "low", "normal", "normal", "bogus"])
op = st.tuples(
    st.sampled_from(["add", "add", "replace", "remove"]),
    st.sampled_from(["user", "memory"]),
    text,
    old_text,
    importance,
)


def _pick(existing: list[str], selector: int | str) -> str:
    if isinstance(selector, str):
        return selector
    if not existing:
        return "nothing stored"
    entry = existing[selector % len(existing)]
    start = (selector // 7) % len(entry)
    return entry[start : start + 1 + selector % 9]


def _files(root: Path) -> tuple[bytes, bytes, bytes]:
    folder = root / "runtime"
    return tuple(  # type: ignore[return-value]
        (folder / name).read_bytes() for name in ("memories.json", "USER.md", "MEMORY.md")
    )


def _body_bytes(projection: bytes) -> int:
    return len(projection) - 1 if projection else 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_random_sequences_keep_invariants(ops: list[tuple[str, str, str, int | str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rm = RuntimeMemory(
            root, user_limit_bytes=LIMITS["user"], memory_limit_bytes=LIMITS["memory"]
        )
        for action, target, content, old, importance in ops:
            before = _files(root)
            state_before = json.loads(before[0])["entries"]
            revision_before = rm.revision
            old = _pick([e.content for e in rm.entries(target)], old)  # type: ignore[arg-type]
            try:
                if action == "add":
                    receipt = rm.add(target, content, importance=importance)  # type: ignore[arg-type]
                elif action == "replace":
                    receipt = rm.replace(target, old, content, importance=importance)  # type: ignore[arg-type]
                else:
                    receipt = rm.remove(target, old)  # type: ignore[arg-type]
            except MnemonError:
                assert _files(root) == before, "a rejected operation changed files"
                assert rm.revision == revision_before
                continue
            after = _files(root)
            state_after = json.loads(after[0])["entries"]
            assert (rm.revision != revision_before) == (state_after != state_before)
            assert receipt.changed == (state_after != state_before)
            assert receipt.revision == rm.revision
            for name, projection in (("user", after[1]), ("memory", after[2])):
                usage = rm.usage(name)  # type: ignore[arg-type]
                assert _body_bytes(projection) == usage.used
                assert usage.used <= LIMITS[name]
                assert (
                    projection
                    == (
                        "\n§\n".join(e["content"] for e in state_after if e["target"] == name)
                        + "\n"
                        if any(e["target"] == name for e in state_after)
                        else ""
                    ).encode()
                )
            assert receipt.usage == rm.usage(target)  # type: ignore[arg-type]
