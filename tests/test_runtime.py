"""Runtime Memory: storage format, mutations, matching, capacity, snapshot, maintenance.

Behaviour seen through the public API runs on every backend (``backend``: files, a SQLite
database, PostgreSQL; see ``runtime_support``); the storage format, projections, corrupt files
and folder layout are the file backend's own and stay on files.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from runtime_support import RuntimeBackend, backend_fixture  # noqa: F401  (the fixture)

from langgraph_mnemon.errors import (
    AmbiguousMatchError,
    CapacityError,
    ConflictError,
    InvalidInputError,
    NoMatchError,
    StorageError,
)
from langgraph_mnemon.memory_layers.runtime import (
    RUNTIME_MEMORY_PROTOCOL,
    CompactedEntry,
    RuntimeMemory,
    RuntimeMutation,
    compaction_budget,
    current_git_branch,
)


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def rm(backend: RuntimeBackend, tmp_path: Path, clock: Clock) -> RuntimeMemory:
    return backend.open(tmp_path, clock=clock)


@pytest.fixture
def file_rm(tmp_path: Path, clock: Clock) -> RuntimeMemory:
    return RuntimeMemory(tmp_path, clock=clock)


def files(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for name in ("memories.json", "USER.md", "MEMORY.md"):
        path = root / "runtime" / name
        out[name] = path.read_bytes() if path.exists() else None
    return out


def stored(backend: RuntimeBackend, root: Path) -> tuple[dict[str, bytes | None], dict]:
    """What the backend keeps: the runtime files under ``root`` and every runtime table row."""
    return files(root), backend.dump()


# -- storage format -----------------------------------------------------------------------------


def test_add_writes_authority_and_projections(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    r1 = file_rm.add("user", "Prefers tea.")
    r2 = file_rm.add("user", "Works in Berlin.", importance="critical")
    file_rm.add("memory", "Run tests with pytest -q.", branches=["main", "feature/x"])
    assert (r1.status, r1.message, r1.changed, r1.added) == (
        "committed",
        "Entry added.",
        True,
        "Prefers tea.",
    )
    assert r2.entry_count == 2
    assert r2.usage.used == len(b"Prefers tea.") + 4 + len(b"Works in Berlin.")
    raw = (tmp_path / "runtime" / "memories.json").read_text()
    assert raw.endswith("}\n")
    data = json.loads(raw)
    assert raw == json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    assert data["version"] == 1
    assert next(list(e) for e in data["entries"]) == [
        "content",
        "created_at",
        "updated_at",
        "target",
        "importance",
    ]
    assert data["entries"][1]["importance"] == "critical"
    assert data["entries"][2]["branches"] == ["main", "feature/x"]
    assert "branches" not in data["entries"][0]
    assert data["entries"][0]["created_at"] == "2026-03-01T12:00:00.000Z"
    user_md = (tmp_path / "runtime" / "USER.md").read_text()
    assert user_md == "Prefers tea.\n§\nWorks in Berlin.\n"
    assert (tmp_path / "runtime" / "MEMORY.md").read_text() == "Run tests with pytest -q.\n"


def test_empty_root_has_empty_projections(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    assert files(tmp_path) == {
        "memories.json": b'{\n  "version": 1,\n  "entries": []\n}\n',
        "USER.md": b"",
        "MEMORY.md": b"",
    }
    assert file_rm.entries() == []


def test_directory_and_file_modes(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    file_rm.add("user", "x1")
    assert (tmp_path / "runtime").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "runtime" / "memories.json").stat().st_mode & 0o777 == 0o600


def test_revision_is_sha256_of_json_state(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    file_rm.add("memory", "Deploys go through staging first.")
    data = json.loads((tmp_path / "runtime" / "memories.json").read_text())
    expected = hashlib.sha256(
        json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    ).hexdigest()
    assert file_rm.revision == expected
    assert len(expected) == 64


def test_content_is_whitespace_normalised(rm: RuntimeMemory) -> None:
    receipt = rm.add("memory", "  Use\tuv\n\n  for   installs \u3000 ")
    assert receipt.added == "Use uv for installs"
    assert rm.entries("memory")[0].content == "Use uv for installs"


def test_identical_add_is_committed_noop(
    rm: RuntimeMemory, backend: RuntimeBackend, tmp_path: Path
) -> None:
    rm.add("user", "Prefers tea.")
    before = stored(backend, tmp_path)
    revision = rm.revision
    receipt = rm.add("user", "  Prefers   tea. ")
    assert receipt.status == "committed"
    assert receipt.changed is False
    assert receipt.message == "Entry already exists (no duplicate added)."
    assert rm.revision == revision == receipt.revision
    assert stored(backend, tmp_path) == before


def test_same_text_in_other_target_is_separate(rm: RuntimeMemory) -> None:
    rm.add("user", "Shared text")
    assert rm.add("memory", "Shared text").changed


# -- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": "both", "content": "x"}, "target must be memory or user"),
        ({"target": "user", "content": 5}, "content must be a string (got int)"),
        ({"target": "user", "content": None}, "content must be a string (got NoneType)"),
        ({"target": "user", "content": "   \n "}, "content is required"),
        (
            {"target": "user", "content": "a § b"},
            "content must not contain the reserved § entry delimiter",
        ),
        ({"target": "user", "content": "x" * 8193}, "content is too large (8193 bytes; max 8192)"),
        ({"target": "user", "content": "中" * 2731}, "content is too large (8193 bytes; max 8192)"),
        (
            {"target": "user", "content": "x", "importance": "high"},
            "importance must be critical, normal, or low",
        ),
        (
            {"target": "user", "content": "x", "branches": ["main"]},
            "branches applies to target=memory only",
        ),
    ],
)
def test_add_rejects_bad_input(
    rm: RuntimeMemory, backend: RuntimeBackend, tmp_path: Path, kwargs: dict, message: str
) -> None:
    before = stored(backend, tmp_path)
    kwargs = dict(kwargs)  # the parameter dict is shared by every backend's run
    target = kwargs.pop("target")
    content = kwargs.pop("content")
    with pytest.raises(InvalidInputError) as info:
        rm.add(target, content, **kwargs)
    assert str(info.value) == message
    assert stored(backend, tmp_path) == before


def test_max_entry_size_is_accepted(rm: RuntimeMemory) -> None:
    rm_big = rm.add("memory", "中" * 2730 + "ab")  # 8,192 bytes exactly
    assert rm_big.usage.used == 8192


@pytest.mark.parametrize(
    "branch",
    [
        "",
        "-main",
        "/main",
        "main/",
        "main.",
        "a..b",
        "a//b",
        "a@{b",
        "with space",
        "ümlaut",
        "x" * 129,
        7,
    ],
)
def test_invalid_branch_names(rm: RuntimeMemory, branch: object) -> None:
    with pytest.raises(InvalidInputError, match="invalid branch name"):
        rm.add("memory", "x", branches=[branch])  # type: ignore[list-item]


def test_branch_list_rules(rm: RuntimeMemory) -> None:
    with pytest.raises(InvalidInputError, match="listed twice"):
        rm.add("memory", "x", branches=["main", "main"])
    with pytest.raises(InvalidInputError, match="at most 16"):
        rm.add("memory", "x", branches=[f"b{i}" for i in range(17)])
    with pytest.raises(InvalidInputError, match="list of branch names"):
        rm.add("memory", "x", branches="main")  # type: ignore[arg-type]
    ok = rm.add("memory", "x", branches=[f"release/v1.{i}" for i in range(16)] + [])
    assert ok.changed
    assert rm.add("memory", "y", branches=["a" * 128, "feature/a-b_c.d"]).changed
    assert rm.add("memory", "z", branches=[]).changed  # [] means unscoped
    assert rm.entries("memory")[-1].branches is None
    # An empty list is accepted (and ignored) for user entries.
    assert rm.add("user", "u", branches=[]).changed


# -- replace / remove ---------------------------------------------------------------------------


def test_exact_match_wins_over_substring(rm: RuntimeMemory) -> None:
    rm.add("memory", "Use uv")
    rm.add("memory", "Use uv for installs")
    receipt = rm.replace("memory", "use uv".replace("use", "Use"), "Use pip")
    assert receipt.replaced == {"from": "Use uv", "to": "Use pip"}
    assert [e.content for e in rm.entries("memory")] == ["Use pip", "Use uv for installs"]


def test_unique_substring_and_messages(rm: RuntimeMemory) -> None:
    rm.add("memory", "Deploy with make deploy")
    rm.add("memory", "Deploy docs with mkdocs")
    with pytest.raises(AmbiguousMatchError) as amb:
        rm.remove("memory", "Deploy")
    assert str(amb.value) == 'Multiple memory entries contain "Deploy"; use a unique substring.'
    with pytest.raises(NoMatchError) as none:
        rm.remove("memory", "kubectl")
    assert str(none.value) == 'No memory entry contains "kubectl".'
    with pytest.raises(NoMatchError):
        rm.remove("user", "Deploy")  # other target is not searched
    receipt = rm.remove("memory", "mkdocs")
    assert (receipt.message, receipt.removed) == ("Entry removed.", "Deploy docs with mkdocs")


def test_duplicate_exact_entries_are_ambiguous(tmp_path: Path) -> None:
    entry = {
        "content": "dup",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "target": "memory",
        "importance": "normal",
    }
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "memories.json").write_text(
        json.dumps({"version": 1, "entries": [entry, entry]})
    )
    rm = RuntimeMemory(tmp_path)
    with pytest.raises(AmbiguousMatchError):
        rm.remove("memory", "dup")


def test_old_text_is_normalised_and_validated(rm: RuntimeMemory) -> None:
    rm.add("memory", "Use uv for installs")
    assert rm.remove("memory", "  uv \n for ").changed
    with pytest.raises(InvalidInputError, match="old_text is required"):
        rm.remove("memory", "  ")
    with pytest.raises(InvalidInputError, match="old_text must be a string"):
        rm.remove("memory", None)  # type: ignore[arg-type]


def test_replace_keeps_created_at_and_defaults(rm: RuntimeMemory, clock: Clock) -> None:
    rm.add("memory", "Old rule", importance="critical", branches=["main"])
    clock.advance(days=3)
    rm.replace("memory", "Old rule", "New rule")
    entry = rm.entries("memory")[0]
    assert entry.created_at == "2026-03-01T12:00:00.000Z"
    assert entry.updated_at == "2026-03-04T12:00:00.000Z"
    assert (entry.importance, entry.branches) == ("critical", ("main",))
    rm.replace("memory", "New rule", "Newer rule", importance="low", branches=["dev"])
    assert rm.entries("memory")[0].branches == ("dev",)
    rm.replace("memory", "Newer rule", "Newest rule", branches=[])
    entry = rm.entries("memory")[0]
    assert (entry.importance, entry.branches) == ("low", None)


def test_replace_to_identical_is_noop(
    rm: RuntimeMemory, backend: RuntimeBackend, tmp_path: Path
) -> None:
    rm.add("user", "Prefers tea.")
    before = stored(backend, tmp_path)
    receipt = rm.replace("user", "tea", "Prefers tea.")
    assert receipt.changed is False
    assert stored(backend, tmp_path) == before


def test_replace_onto_existing_content_is_rejected(
    rm: RuntimeMemory, backend: RuntimeBackend, tmp_path: Path
) -> None:
    rm.add("user", "A fact")
    rm.add("user", "B fact")
    before = stored(backend, tmp_path)
    with pytest.raises(InvalidInputError, match="already has this content"):
        rm.replace("user", "A fact", "B fact")
    assert stored(backend, tmp_path) == before


def test_entries_keep_file_order_across_targets(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    file_rm.add("user", "u1")
    file_rm.add("memory", "m1")
    file_rm.add("user", "u2")
    file_rm.replace("user", "u1", "u1b")
    file_rm.remove("memory", "m1")
    file_rm.add("memory", "m2")
    data = json.loads((tmp_path / "runtime" / "memories.json").read_text())
    assert [e["content"] for e in data["entries"]] == ["u1b", "u2", "m2"]


# -- capacity -----------------------------------------------------------------------------------


def test_capacity_counts_utf8_bytes_and_delimiters(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, user_limit_bytes=20)
    rm.add("user", "中文")  # 6 bytes
    rm.add("user", "😀😀")  # 8 bytes + 4 delimiter = 18
    assert rm.usage("user").used == 18
    with pytest.raises(CapacityError):
        rm.add("user", "x")  # 18 + 4 + 1 = 23 > 20
    rm.remove("user", "中文")  # now 8
    rm.add("user", "12345678")  # 8 + 4 + 8 = 20 == limit: fits exactly
    assert rm.usage("user").used == 20
    projection = backend.projection(rm, tmp_path, "user")
    assert len(projection) == 20 + 1  # body + trailing newline


def test_capacity_error_message_plan_and_no_change(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=30)
    rm.add("memory", "first entry here")  # 16 bytes
    before = stored(backend, tmp_path)
    revision = rm.revision
    with pytest.raises(CapacityError) as info:
        rm.add("memory", "second entry too long", importance="critical")
    exc = info.value
    assert exc.code == "runtime-capacity"
    assert str(exc) == (
        "Would exceed memory runtime memory capacity: 41 bytes (current 16, limit 30). "
        "Archive and compact runtime memory before retrying."
    )
    plan = exc.plan
    assert plan.requires_maintenance
    assert (plan.used, plan.projected, plan.limit, plan.revision) == (16, 41, 30, revision)
    assert plan.pending.content == "second entry too long"
    assert plan.pending.importance == "critical"
    assert [e.content for e in plan.entries] == ["first entry here"]
    assert plan.budget == 0  # floor(0.7 × 30) − 21 − 4 clamps at zero
    assert stored(backend, tmp_path) == before


def test_shrinking_replace_over_a_lowered_limit_is_allowed(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=100)
    rm.add("memory", "a" * 60)
    rm.add("memory", "b" * 30)
    lowered = backend.open(tmp_path, memory_limit_bytes=50)
    assert lowered.replace("memory", "a" * 60, "a" * 20).changed  # 54 > 50 but shrinking
    assert lowered.remove("memory", "b" * 30).changed
    with pytest.raises(CapacityError):
        lowered.replace("memory", "a" * 20, "a" * 51)


def test_compaction_budget_formula() -> None:
    assert compaction_budget(10240, 100) == 7168 - 100 - 4
    assert compaction_budget(4096) == 2867
    assert compaction_budget(10, 50) == 0


# -- corrupt and repaired state -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "is unreadable"),
        ('{"version": 2, "entries": []}', "must use version 1"),
        ('{"version": 1, "entries": {}}', "invalid entry list"),
        ('{"version": 1, "entries": [{"content": "x"}]}', "contains an invalid entry"),
        (
            (
                '{"version": 1, "entries": [{"content": "a § b", "created_at": "", '
                '"updated_at": "", "target": "user"}]}'
            ),
            "contains an invalid entry",
        ),
        (
            (
                '{"version": 1, "entries": [{"content": "x", "created_at": "", '
                '"updated_at": "", "target": "user", "branches": ["main"]}]}'
            ),
            "branches applies to target=memory only",
        ),
    ],
)
def test_corrupt_authority_is_reported_and_never_overwritten(
    tmp_path: Path, text: str, fragment: str
) -> None:
    path = tmp_path / "runtime" / "memories.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(StorageError) as info:
        RuntimeMemory(tmp_path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)
    assert path.read_text() == text
    assert not (tmp_path / "runtime" / "USER.md").exists()


def test_corrupt_authority_after_open_blocks_writes(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    file_rm.add("user", "keep me")
    path = tmp_path / "runtime" / "memories.json"
    path.write_text("garbage")
    with pytest.raises(StorageError):
        file_rm.add("user", "another")
    assert path.read_text() == "garbage"


def test_projections_are_repaired_on_open(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    file_rm.add("user", "Prefers tea.")
    file_rm.add("memory", "Use uv.")
    good = files(tmp_path)
    (tmp_path / "runtime" / "USER.md").unlink()
    (tmp_path / "runtime" / "MEMORY.md").write_text("tampered")
    (tmp_path / "runtime" / ".MEMORY.md.abc123.tmp").write_text("left by a dead writer")
    RuntimeMemory(tmp_path)
    assert files(tmp_path) == good
    assert not list((tmp_path / "runtime").glob("*.tmp"))


def test_snapshot_repairs_projections(file_rm: RuntimeMemory, tmp_path: Path) -> None:
    file_rm.add("memory", "Use uv.")
    (tmp_path / "runtime" / "MEMORY.md").write_text("")
    file_rm.snapshot(branch="main")
    assert (tmp_path / "runtime" / "MEMORY.md").read_text() == "Use uv.\n"


def test_external_change_is_seen(
    rm: RuntimeMemory, backend: RuntimeBackend, tmp_path: Path, clock: Clock
) -> None:
    other = backend.open(tmp_path, clock=clock)
    rm.add("user", "from first")
    other.add("user", "from second")
    assert [e.content for e in rm.entries("user")] == ["from first", "from second"]


# -- snapshot -----------------------------------------------------------------------------------


def test_snapshot_text(backend: RuntimeBackend, tmp_path: Path, clock: Clock) -> None:
    rm = backend.open(tmp_path, clock=clock)
    rm.add("user", "Prefers tea.", importance="critical")
    rm.add("memory", "Global rule.")
    rm.add("memory", "Main only.", branches=["main"])
    rm.add("memory", "Dev only.", branches=["dev", "main"], importance="low")
    clock.advance(days=14, hours=5)
    rm.replace("memory", "Global rule.", "Global rule v2.")
    clock.advance(days=2)
    snap = rm.snapshot(branch="feature/x")
    revision = rm.revision
    assert snap.revision == revision
    assert snap.hidden == 2
    assert snap.text == (
        "MNEMON RUNTIME MEMORY SNAPSHOT\n"
        f"Revision: {revision}\n"
        "Git branch: feature/x (2 branch-scoped entries hidden)\n"
        "\n"
        "Contents of USER.md (user profile; entries: 1; UTF-8 bytes: 12/4096)\n"
        '<runtime-memory-file name="USER.md" boundary="1adcf823ca95">\n'
        "[boundary=1adcf823ca95; importance=critical; created=16d; updated=16d]\n"
        "Prefers tea.\n"
        '</runtime-memory-file boundary="1adcf823ca95">\n'
        "\n"
        "Contents of MEMORY.md (working reference; entries: 1; UTF-8 bytes: 42/10240)\n"
        '<runtime-memory-file name="MEMORY.md" boundary="af5a55e3803f">\n'
        "[boundary=af5a55e3803f; importance=normal; created=16d; updated=2d]\n"
        "Global rule v2.\n"
        '</runtime-memory-file boundary="af5a55e3803f">'
    )
    main = rm.snapshot(branch="main")
    assert "Git branch: main\n" in main.text
    assert main.text.count("\n§\n") == 2
    dev = rm.snapshot(branch="dev")
    assert "(1 branch-scoped entry hidden)" in dev.text


def test_snapshot_without_branch_shows_everything(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, workspace=tmp_path)  # not a git work tree
    rm.add("memory", "Main only.", branches=["main"])
    snap = rm.snapshot()
    assert snap.branch is None
    assert "Git branch" not in snap.text
    assert "Main only." in snap.text
    assert "(empty)" in snap.text  # USER.md


def test_snapshot_age_annotations(tmp_path: Path) -> None:
    path = tmp_path / "runtime" / "memories.json"
    path.parent.mkdir()

    def entry(content: str, created: str) -> dict:
        return {
            "content": content,
            "created_at": created,
            "updated_at": created,
            "target": "user",
            "importance": "normal",
        }

    path.write_text(
        json.dumps(
            {
                "version": 1,
                "entries": [
                    entry("recent", "2026-03-01T00:00:01.000Z"),
                    entry("future", "2026-04-01T00:00:00.000Z"),
                    entry("garbled", "yesterday"),
                    entry("offset", "2026-02-27T13:00:00+01:00"),
                ],
            }
        )
    )
    text = RuntimeMemory(tmp_path).snapshot(branch="main", now=T0).text
    assert "created=0d; updated=0d]\nrecent" in text
    assert "created=future; updated=future]\nfuture" in text
    assert "created=unknown; updated=unknown]\ngarbled" in text
    assert "created=2d; updated=2d]\noffset" in text


def test_git_branch_detection(backend: RuntimeBackend, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature/login\n")
    assert current_git_branch(repo / "src") == "feature/login"
    (repo / ".git" / "HEAD").write_text("3f0c1e2d4b5a69788796a5b4c3d2e1f0a9b8c7d6\n")
    assert current_git_branch(repo) is None  # detached
    worktree = tmp_path / "wt"
    worktree.mkdir()
    gitdir = tmp_path / "gitdirs" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/hotfix\n")
    (worktree / ".git").write_text(f"gitdir: {gitdir}\n")
    assert current_git_branch(worktree) == "hotfix"
    assert current_git_branch(None) is None

    rm = backend.open(tmp_path / "root", workspace=worktree)
    rm.add("memory", "Only on main", branches=["main"])
    rm.add("user", "User entries are never hidden")
    snap = rm.snapshot()
    assert snap.branch == "hotfix"
    assert snap.hidden == 1
    assert "User entries are never hidden" in snap.text


def test_protocol_is_static_and_separate(rm: RuntimeMemory) -> None:
    before = RUNTIME_MEMORY_PROTOCOL
    rm.add("user", "something")
    snap = rm.snapshot(branch="main")
    assert before == RUNTIME_MEMORY_PROTOCOL
    assert RUNTIME_MEMORY_PROTOCOL.startswith("MNEMON RUNTIME MEMORY PROTOCOL\n")
    assert "PROTOCOL" not in snap.text
    assert 2000 < len(RUNTIME_MEMORY_PROTOCOL.encode()) < 4500


# -- global user scope --------------------------------------------------------------------------


def test_global_user_scope(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    rm = RuntimeMemory(project, user_root=home)
    rm.add("user", "Name is Ada.")
    rm.add("memory", "Project uses uv.")
    assert (home / "runtime" / "USER.md").read_text() == "Name is Ada.\n"
    assert (project / "runtime" / "MEMORY.md").read_text() == "Project uses uv.\n"
    assert (project / "runtime" / "USER.md").read_text() == ""
    # Another project shares the user profile but not the working memory.
    other = RuntimeMemory(tmp_path / "other", user_root=home)
    assert [e.content for e in other.entries("user")] == ["Name is Ada."]
    assert other.entries("memory") == []
    assert other.revision != rm.revision
    # Entries of the "wrong" target in a file stay on disk but are not shown.
    stray = RuntimeMemory(home)
    stray.add("memory", "home working memory")
    assert [e.content for e in rm.entries("memory")] == ["Project uses uv."]
    assert "home working memory" not in rm.snapshot(branch="main").text
    assert json.loads((home / "runtime" / "memories.json").read_text())["entries"][1][
        "content"
    ] == ("home working memory")


# -- maintenance primitives ---------------------------------------------------------------------


def _fill(rm: RuntimeMemory) -> None:
    rm.add("memory", "alpha low", importance="low")
    rm.add("memory", "bravo normal")
    rm.add("memory", "charlie critical", importance="critical")
    rm.add("memory", "delta normal")


def test_plan_maintenance_excludes_pending_and_replaced(
    backend: RuntimeBackend, tmp_path: Path
) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=64)
    _fill(rm)  # 9 + 12 + 16 + 12 bytes + 3 delimiters = 61
    used = rm.usage("memory").used
    plan = rm.plan_maintenance(
        RuntimeMutation(action="replace", target="memory", old_text="bravo", content="bravo X" * 3)
    )
    assert plan.excluded is not None
    assert plan.excluded.content == "bravo normal"
    assert [e.content for e in plan.entries] == ["alpha low", "charlie critical", "delta normal"]
    assert plan.pending is not None
    assert plan.pending.importance == "normal"
    assert plan.used == used
    assert plan.requires_maintenance == (plan.projected > 60)
    add_plan = rm.plan_maintenance(RuntimeMutation(action="add", target="memory", content="tiny"))
    assert add_plan.excluded is None
    assert len(add_plan.entries) == 4
    noop = rm.plan_maintenance(
        RuntimeMutation(action="add", target="memory", content="delta normal")
    )
    assert noop.pending is None
    assert not noop.requires_maintenance


def test_plan_maintenance_validates(rm: RuntimeMemory) -> None:
    with pytest.raises(InvalidInputError):
        rm.plan_maintenance({"action": "add"})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="content must not contain"):
        rm.plan_maintenance(RuntimeMutation(action="add", target="user", content="a§b"))


def test_compact_and_mutate_packs_by_importance(
    backend: RuntimeBackend, tmp_path: Path, clock: Clock
) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=64, clock=clock)
    _fill(rm)
    request = RuntimeMutation(action="add", target="memory", content="echo new", importance="low")
    plan = rm.plan_maintenance(request)
    original = {e.content: e for e in rm.entries("memory")}
    compacted = [CompactedEntry(content=e.content, importance=e.importance) for e in plan.entries]
    receipt = rm.compact_and_mutate(plan.revision, request, compacted, max_bytes=30)
    # Critical first (16 bytes), then normals in order: bravo (12+4) fits at 32? no -> 30 budget.
    # Budget 30: charlie (16) first; bravo/delta (+16) would overflow; alpha (+13) fits.
    kept = [e.content for e in rm.entries("memory")]
    assert kept == ["alpha low", "charlie critical", "echo new"]
    assert receipt.status == "committed"
    assert receipt.changed
    assert set(receipt.left_out) == set(original) - set(kept)
    assert receipt.archived_locally == len(receipt.left_out)
    # Unchanged text keeps its timestamps.
    assert rm.entries("memory")[0].created_at == original["charlie critical"].created_at
    archived = rm.archived("memory")
    assert {a["entry"]["content"] for a in archived} == set(receipt.left_out)
    assert all(a["revision"] == plan.revision for a in archived)


def test_packing_is_deterministic_and_keeps_order(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=200)
    _fill(rm)
    plan = rm.plan_maintenance(RuntimeMutation(action="add", target="memory", content="zz"))
    candidates = [
        CompactedEntry(content="n1 normal"),  # 9
        CompactedEntry(content="c1 critical!", importance="critical"),  # 12
        CompactedEntry(content="l1 low", importance="low"),  # 6
        CompactedEntry(content="n2 normal"),  # 9
    ]
    # budget 35: c1 (12) + n1 (4+9=25) + n2 (4+9=38 > 35 skip) + l1 (4+6=35) -> fits
    request = RuntimeMutation(action="add", target="memory", content="zz")
    rm.compact_and_mutate(plan.revision, request, candidates, max_bytes=35, archive_left_out=False)
    assert [e.content for e in rm.entries("memory")] == [
        "n1 normal",
        "c1 critical!",
        "l1 low",
        "zz",
    ]
    assert rm.archived("memory") == []


def test_compact_and_mutate_conflict_leaves_files(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=64)
    _fill(rm)
    request = RuntimeMutation(action="add", target="memory", content="echo new")
    plan = rm.plan_maintenance(request)
    rm.remove("memory", "alpha")  # a concurrent write lands
    before = stored(backend, tmp_path)
    with pytest.raises(ConflictError) as info:
        rm.compact_and_mutate(plan.revision, request, [CompactedEntry(content="merged")])
    assert "no compacted data was applied" in str(info.value)
    assert stored(backend, tmp_path) == before


@pytest.mark.parametrize(
    ("candidates", "message"),
    [
        (["same", "same"], "compacted runtime memory contains duplicate entries"),
        (["echo new"], "compacted runtime memory duplicates the pending mutation"),
    ],
)
def test_compact_rejects_bad_candidates(
    backend: RuntimeBackend, tmp_path: Path, candidates: list[str], message: str
) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=64)
    _fill(rm)
    request = RuntimeMutation(action="add", target="memory", content="echo new")
    plan = rm.plan_maintenance(request)
    before = stored(backend, tmp_path)
    with pytest.raises(InvalidInputError) as info:
        rm.compact_and_mutate(
            plan.revision, request, [CompactedEntry(content=c) for c in candidates]
        )
    assert str(info.value) == message
    assert stored(backend, tmp_path) == before


def test_compact_rejects_reintroduced_entry(
    backend: RuntimeBackend, tmp_path: Path, clock: Clock
) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=64, clock=clock)
    _fill(rm)
    request = RuntimeMutation(
        action="replace", target="memory", old_text="bravo", content="bravo rewritten and longer"
    )
    plan = rm.plan_maintenance(request)
    with pytest.raises(InvalidInputError, match="reintroduces the replaced or removed entry"):
        rm.compact_and_mutate(plan.revision, request, [CompactedEntry(content="bravo normal")])
    clock.advance(days=1)
    receipt = rm.compact_and_mutate(
        plan.revision,
        request,
        [CompactedEntry(content="charlie critical", importance="critical")],
        max_bytes=30,
    )
    entries = rm.entries("memory")
    assert [e.content for e in entries] == ["charlie critical", "bravo rewritten and longer"]
    assert entries[1].created_at == "2026-03-01T12:00:00.000Z"  # kept from the replaced entry
    assert entries[1].updated_at == "2026-03-02T12:00:00.000Z"
    assert set(receipt.left_out) == {"alpha low", "delta normal"}


def test_compact_result_must_fit_limit(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, memory_limit_bytes=64)
    _fill(rm)
    request = RuntimeMutation(action="add", target="memory", content="y" * 50)
    plan = rm.plan_maintenance(request)
    before = stored(backend, tmp_path)
    with pytest.raises(CapacityError):
        rm.compact_and_mutate(
            plan.revision, request, [CompactedEntry(content="charlie critical")], max_bytes=60
        )
    assert stored(backend, tmp_path) == before


def test_compact_target_without_pending(backend: RuntimeBackend, tmp_path: Path) -> None:
    rm = backend.open(tmp_path, user_limit_bytes=100)
    rm.add("user", "Likes tea")
    rm.add("user", "Likes green tea")
    receipt = rm.compact_target(
        rm.revision, "user", [CompactedEntry(content="Likes tea, especially green tea")]
    )
    assert receipt.action == "compact"
    assert [e.content for e in rm.entries("user")] == ["Likes tea, especially green tea"]
    # USER entries merged away are archived locally, never sent anywhere else.
    assert {a["entry"]["content"] for a in rm.archived("user")} == {"Likes tea", "Likes green tea"}
    with pytest.raises(InvalidInputError, match="branches applies to target=memory only"):
        rm.compact_target(rm.revision, "user", [CompactedEntry(content="x", branches=("main",))])
    with pytest.raises(InvalidInputError):
        rm.compact_target(rm.revision, "user", "not a list")  # type: ignore[arg-type]


def test_item17_5_an_entry_larger_than_the_whole_file_gets_advice_that_can_work(
    backend: RuntimeBackend,
    tmp_path: Path,
) -> None:
    """No compaction can make room for an entry larger than the limit itself: the host does not
    try, and the error says what can work."""
    from langgraph_mnemon import RuntimeMutation

    mem = backend.host(tmp_path / "root", runtime={"user_limit_bytes": 64})
    mem.runtime.add("user", "Prefers metric units.")
    before = stored(backend, tmp_path / "root" / "runtime")
    with pytest.raises(CapacityError) as info:
        mem.write_runtime(RuntimeMutation(action="add", target="user", content="x" * 65))
    assert info.value.code == "runtime-entry-too-large"
    assert info.value.plan is None
    assert "Shorten it, split it into smaller entries, or store it as a Document" in str(info.value)
    assert "compact" not in str(info.value).split("so compacting")[1]
    assert stored(backend, tmp_path / "root" / "runtime") == before
    mem.close()
