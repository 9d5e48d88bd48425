"""Documents search: tokenizer, coverage, scoring, suggestions, evidence windows, model bounds."""

from __future__ import annotations

import re
import tempfile
import time
import unicodedata
from pathlib import Path

import pytest
from documents_support import Backend, Clock
from documents_support import backend as backend  # the fixture, on every backend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lock_support import hold_lock

from langgraph_mnemon.errors import InvalidInputError
from langgraph_mnemon.memory_layers import text
from langgraph_mnemon.memory_layers.documents import (
    EARLIER_MARKER,
    LATER_MARKER,
    DocumentHit,
    Documents,
    DocumentSearchResult,
    bound_for_model,
    evidence_window,
    excerpt,
    normalize_text,
    required_coverage,
    tokenize,
)


def open_docs(tmp_path: Path, **kwargs: object) -> Documents:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    kwargs.setdefault("clock", Clock())
    return Documents(workspace / ".mnemon", workspace=workspace, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# tokenizer


def test_tokenizer_han_runs_and_words() -> None:
    assert tokenize("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert tokenize("数据") == ["数据"]
    assert tokenize("库") == ["库"]  # a one-character Han run is kept whole
    assert tokenize("a b cc") == ["cc"]  # other tokens need two characters
    assert tokenize("Hello, WORLD! hello") == ["hello", "world"]  # lowercased, deduped
    assert tokenize("feature-x_1 v1.2") == ["feature-x_1", "v1"]
    assert tokenize("ＡＰＩ　ｇａｔｅｗａｙ") == ["api", "gateway"]  # NFKC full-width
    assert tokenize("api接口设计") == ["api", "接口", "口设", "设计"]
    assert tokenize("Ünïcödé café") == ["ünïcödé", "café"]
    assert tokenize("٣٤ число") == ["٣٤", "число"]  # any script's letters and digits
    assert tokenize("!!! ... ???") == []
    assert tokenize("") == []


def test_tokenizer_caps_at_64_tokens_and_accepts_a_cap() -> None:
    words = " ".join(f"w{i:03d}" for i in range(100))
    assert len(tokenize(words)) == 64
    assert tokenize(words)[:2] == ["w000", "w001"]
    assert len(tokenize(words, 32)) == 32
    assert len(tokenize("数" * 600, 512)) == 1  # one distinct bigram
    with pytest.raises(InvalidInputError):
        tokenize(None)  # type: ignore[arg-type]


def test_word_class_is_unicode_letters_numbers_underscore_hyphen() -> None:
    # The reference uses ``[\p{L}\p{N}_-]+``; Python's ``re`` has no ``\p``, so the module relies
    # on ``[\w-]`` being the same set. Check that claim over every code point.
    word = re.compile(r"[\w-]")
    wrong = [
        hex(code)
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF
        and (unicodedata.category(chr(code))[0] in "LN" or chr(code) in "_-")
        != bool(word.match(chr(code)))
    ]
    assert wrong == []
    assert text._WORD_RUN.pattern == r"[\w-]+"


def test_han_characters_form_runs() -> None:
    for char in "中々〇𠀀丽":  # CJK, iteration mark, ideographic zero, Ext B, compatibility
        assert text._HAN_RUN.fullmatch(char), hex(ord(char))
    for char in "あアa한":
        assert not text._HAN_RUN.fullmatch(char), hex(ord(char))


def test_required_coverage() -> None:
    assert [required_coverage(n) for n in range(13)] == [0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3]
    assert required_coverage(64) == 16


# --------------------------------------------------------------------------------------------
# scoring and matching


def test_score_weights_whole_query_and_tokens(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    in_title = docs.create("Release checklist", "nothing here").document
    in_desc = docs.create("Ops", "nothing", description="the release checklist").document
    in_body = docs.create("Misc", "see the release checklist below").document
    split = docs.create("Release", "a checklist").document  # tokens only, not the phrase
    result = docs.search("Release  Checklist")
    scores = {h.id: h.score for h in result.results}
    assert scores[in_title.id] == 12 + 4 + 4
    assert scores[in_desc.id] == 7 + 2 + 2
    assert scores[in_body.id] == 4 + 1 + 1
    assert scores[split.id] == 4 + 1
    assert [h.id for h in result.results] == [in_title.id, in_desc.id, in_body.id, split.id]
    assert result.total == 4
    assert result.query == "Release  Checklist"


def test_whole_query_matches_across_line_breaks(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Notes", "we keep a release\nchecklist").document
    assert docs.search("release checklist").results[0].score == 4 + 1 + 1
    assert docs.search("release checklist").results[0].id == doc.id


def test_coverage_threshold_filters_weak_matches(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    one = docs.create("Alpha", "alpha only").document
    two = docs.create("Beta", "alpha beta").document
    query = "alpha beta gamma delta epsilon zeta eta theta"  # 8 tokens → need 2
    ids = [h.id for h in docs.search(query).results]
    assert ids == [two.id]
    assert one.id not in ids
    # Fewer than 4 tokens → one is enough.
    assert {h.id for h in docs.search("alpha gamma").results} == {one.id, two.id}


def test_substring_containment_of_tokens(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Notes", "database migrations and cataloguing").document
    assert [h.id for h in docs.search("migration").results] == [doc.id]
    assert [h.id for h in docs.search("catalog").results] == [doc.id]


def test_ties_are_broken_by_updated_at_descending(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    first = docs.create("Same", "token").document
    second = docs.create("Same", "token").document
    third = docs.create("Same", "token").document
    assert [h.id for h in docs.search("token").results] == [third.id, second.id, first.id]
    docs.update(first.id, content="token again")
    assert docs.search("token").results[0].id == first.id


def test_chinese_query_matches_chinese_passage(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    zh = docs.create(
        "存储决策",
        "经过评估，我们决定使用嵌入式数据库，并在下个季度完成数据迁移。回滚方案保留三十天。",
    ).document
    docs.create("Storage decision", "We evaluated options and chose an embedded database.")
    result = docs.search("数据迁移的回滚方案")
    assert [h.id for h in result.results] == [zh.id]
    assert result.results[0].score > 0
    assert "数据迁移" in result.results[0].content
    assert result.suggestions == ()
    # Two-character query run is kept whole and matched as a substring.
    assert [h.id for h in docs.search("回滚").results] == [zh.id]


def test_english_document_does_not_match_chinese_query_and_suggests_recent(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    ids = [
        docs.create(f"English doc {i}", f"Deployment notes number {i}.").document.id
        for i in range(5)
    ]
    result = docs.search("部署回滚流程")
    assert result.results == ()
    assert result.total == 0
    assert "No Document matched" in result.hint
    assert [s.id for s in result.suggestions] == [ids[4], ids[3], ids[2]]
    assert all(s.kind == "suggestion" and s.score == 0 for s in result.suggestions)
    assert result.suggestion_hint is not None
    assert result.suggestions[0].content == "Deployment notes number 4."


def test_suggestion_excerpt_is_bounded(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    docs.create("Long", "# Heading\n\n" + "word " * 400)
    [suggestion] = docs.search("不存在").suggestions
    assert len(suggestion.content) <= 1000
    assert suggestion.content.endswith("…")
    assert not suggestion.content.startswith("#")
    assert suggestion.truncated is True


def test_empty_query_lists_recent_and_no_documents_hint(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    empty = docs.search("")
    assert empty.results == ()
    assert empty.suggestions == ()
    assert "no active Documents" in empty.hint
    a = docs.create("A", "a").document
    b = docs.create("B", "b").document
    listed = docs.search("   ", limit=1)
    assert [h.id for h in listed.results] == [b.id]
    assert listed.total == 2
    assert a.id != b.id


def test_single_letter_query_matches_whole_text_only(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("x", "nothing").document
    docs.create("other", "none")
    result = docs.search("x")  # no tokens: only the whole-query rule applies
    assert [(h.id, h.score) for h in result.results] == [(doc.id, 12)]


def test_archived_documents_only_with_include_archived(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    doc = docs.create("Legacy billing", "old billing design").document
    docs.archive_without_index(doc.id, 1)
    assert docs.search("billing").results == ()
    hits = docs.search("billing", include_archived=True).results
    assert [(h.id, h.status) for h in hits] == [(doc.id, "archived")]


def test_limit_and_total(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    for i in range(7):
        docs.create(f"Doc {i}", "shared term")
    result = docs.search("shared", limit=3)
    assert len(result.results) == 3
    assert result.total == 7


def test_search_updates_last_accessed_of_returned_documents_only(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    hit = docs.create("Kafka runbook", "consumer lag").document
    miss = docs.create("Postgres", "vacuum").document
    docs.search("kafka")
    other = backend.open_docs(tmp_path)  # another process view sees the access
    assert other.get(hit.id).last_accessed_at > hit.last_accessed_at
    assert other.get(miss.id).last_accessed_at == miss.last_accessed_at
    # Suggestions are not accesses.
    before = docs.get(miss.id).last_accessed_at
    docs.search("完全无关")
    assert docs.get(miss.id).last_accessed_at == before
    # Bodies are untouched, and the next commit folds the access journal into index.json.
    bumped = docs.get(hit.id).last_accessed_at
    assert backend.unfolded_access(docs)
    docs.create("Third", "x")
    assert not backend.unfolded_access(docs)
    assert f'"last_accessed_at":"{bumped}"' in backend.index_text(docs)


def test_search_sees_changes_made_by_another_instance(tmp_path: Path, backend: Backend) -> None:
    one = backend.open_docs(tmp_path)
    two = backend.open_docs(tmp_path)
    doc = one.create("Alpha", "apples").document
    assert [h.id for h in two.search("apples").results] == [doc.id]
    one.update(doc.id, content="bananas")
    assert two.search("apples").results == ()
    assert [h.id for h in two.search("bananas").results] == [doc.id]
    one.archive_without_index(doc.id, 2)
    assert two.search("bananas").results == ()
    assert [h.status for h in two.search("bananas", include_archived=True).results] == ["archived"]


def test_many_updates_compact_the_search_index(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    other = docs.create("Stable", "unchanging text").document
    doc = docs.create("Counter", "value 0").document
    for i in range(1, 261):  # compaction starts past 256 dead entries
        docs.update(doc.id, content=f"value {i} token{i}")
        assert [h.id for h in docs.search(f"token{i}").results] == [doc.id]
    # Each update left a dead entry behind; past the threshold the index was rebuilt.
    assert len(docs._search.entries) < 100
    assert docs.search("token10 token11").results == ()
    assert [h.id for h in docs.search("token260").results] == [doc.id]
    assert [h.id for h in docs.search("unchanging").results] == [other.id]


# --------------------------------------------------------------------------------------------
# brute force equivalence


def brute_force(docs: Documents, query: str, include_archived: bool, limit: int):
    records = docs.list("all")
    records = [r for r in records if include_archived or r.status == "active"]
    positions = {r.id: i for i, r in enumerate(docs._load().records)}
    nq = normalize_text(query.strip())
    tokens = tokenize(query)
    need = required_coverage(len(tokens))
    rows = []
    for record in records:
        title = normalize_text(record.title)
        desc = normalize_text(record.description)
        body = normalize_text(docs.read(record.id))
        score = 0
        if nq:
            if nq in title:
                score += 12
            elif nq in desc:
                score += 7
            elif nq in body:
                score += 4
        matched = 0
        for token in tokens:
            if token in title:
                score += 4
            elif token in desc:
                score += 2
            elif token in body:
                score += 1
            else:
                continue
            matched += 1
        if not nq or (score > 0 and matched >= need):
            rows.append((score, record.updated_at, positions[record.id], record.id))
    rows.sort(reverse=True)
    return [(r[3], r[0]) for r in rows[:limit]], len(rows)


ALPHABET = "abcAB数据库迁移回滚ＡＢé \n-_.,"
texts = st.text(alphabet=ALPHABET, min_size=1, max_size=40)


@settings(
    max_examples=40,
    deadline=None,
    # One backend per test; every example opens its own root (its own owner on a database).
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(
    corpus=st.lists(st.tuples(texts, texts, texts, st.booleans()), min_size=1, max_size=7),
    queries=st.lists(st.text(alphabet=ALPHABET, max_size=12), min_size=1, max_size=4),
    limit=st.integers(1, 5),
)
def test_indexed_search_equals_brute_force(
    corpus: list[tuple[str, str, str, bool]], queries: list[str], limit: int, backend: Backend
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        docs = backend.open_docs(Path(tmp))
        for title, desc, body, archive in corpus:
            if not title.strip() or not body.strip():
                continue
            record = docs.create(title, body, description=desc).document
            if archive:
                docs.archive_without_index(record.id, 1)
        for query in queries:
            for include_archived in (False, True):
                expected, total = brute_force(docs, query, include_archived, limit)
                got = docs.search(query, include_archived=include_archived, limit=limit)
                assert [(h.id, h.score) for h in got.results] == expected, query
                assert got.total == total


# --------------------------------------------------------------------------------------------
# evidence window


def test_evidence_window_short_content_is_whole() -> None:
    assert evidence_window("short text", "text") == "short text"


def test_evidence_window_is_query_local_with_markers() -> None:
    content = "a" * 6000 + " NEEDLE in the haystack " + "b" * 6000
    window = evidence_window(content, "needle")
    assert len(window) <= 2600
    assert window.startswith(EARLIER_MARKER)
    assert window.endswith(LATER_MARKER)
    inner = window[len(EARLIER_MARKER) : -len(LATER_MARKER)]
    assert inner.index("NEEDLE") == 400  # the window starts 400 characters before the match
    assert content.find(inner) == 6001 - 400


def test_evidence_window_uses_longest_matching_term() -> None:
    content = "x" * 100 + " rollback " + "y" * 5000 + " rollback plan " + "z" * 5000
    window = evidence_window(content, "rollback plan")
    assert "rollback plan" in window
    short = evidence_window(content, "rollback")
    assert short.startswith("x")  # earliest occurrence is near the start: no earlier marker
    assert short.endswith(LATER_MARKER)


def test_evidence_window_near_end_has_no_later_marker() -> None:
    content = "a" * 9000 + " target"
    window = evidence_window(content, "target")
    assert window.startswith(EARLIER_MARKER)
    assert window.endswith("target")
    assert len(window) == 2600


def test_evidence_window_without_match_starts_at_the_beginning() -> None:
    content = "q" * 5000
    window = evidence_window(content, "absent")
    assert window == "q" * (2600 - len(LATER_MARKER)) + LATER_MARKER


def test_evidence_window_locates_case_and_width_variants() -> None:
    content = "x" * 5000 + " ＡＰＩ Gateway " + "y" * 5000
    window = evidence_window(content, "api gateway")
    assert "ＡＰＩ Gateway" in window
    chinese = "无关内容。" * 1000 + "数据迁移方案" + "其他。" * 1000
    assert "数据迁移方案" in evidence_window(chinese, "数据迁移")


def test_evidence_window_never_splits_combining_sequences() -> None:
    unit = "e\u0301"  # e + combining acute accent
    content = unit * 5000 + " needle " + unit * 5000
    for lead in range(395, 406):
        window = evidence_window(content, "needle", lead_chars=lead)
        inner = window[len(EARLIER_MARKER) : -len(LATER_MARKER)]
        assert not unicodedata.combining(inner[0])
        assert inner[-1] == "\u0301"  # never ends on a base that lost its mark
    emoji = "👍🏽" * 3000 + " needle " + "👍🏽" * 3000
    window = evidence_window(emoji, "needle")
    inner = window[len(EARLIER_MARKER) : -len(LATER_MARKER)]
    assert inner[0] == "👍"
    assert inner[-1] == "🏽"
    window.encode("utf-16")  # no lone surrogates


def test_evidence_window_validation() -> None:
    with pytest.raises(InvalidInputError):
        evidence_window(None, "q")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        evidence_window("text", "q", max_chars=10)


def test_search_results_carry_evidence_windows(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    body = "intro " * 1000 + "the failover procedure is manual " + "outro " * 1000
    doc = docs.create("Ops", body).document
    [hit] = docs.search("failover procedure").results
    assert hit.id == doc.id
    assert hit.truncated is True
    assert "failover procedure" in hit.content
    assert len(hit.content) <= 2600


def test_excerpt() -> None:
    assert excerpt("# Title\n\n> *quoted* `code` [link]") == "Title quoted code link"
    long = excerpt("word " * 100)
    assert len(long) == 220
    assert long.endswith("…")


# --------------------------------------------------------------------------------------------
# model-path bounds


def _hit(i: int, content: str) -> DocumentHit:
    return DocumentHit(
        id=f"id-{i}",
        title="T" * 300,
        description="D" * 700,
        status="active",
        relative_path="documents/active/x.md",
        source_paths=tuple(f"p{j}" for j in range(12)),
        score=10 - i,
        content=content,
        truncated=False,
        updated_at="2026-01-01T00:00:00.000Z",
    )


def test_bound_for_model_caps_records_and_characters() -> None:
    result = DocumentSearchResult(
        query="q",
        include_archived=False,
        total=6,
        results=tuple(_hit(i, "c" * 2600) for i in range(6)),
        hint="h",
    )
    bounded = bound_for_model(result)
    assert len(bounded.results) == 3  # 2,600 + 2,600 + 800 = 6,000
    assert sum(len(h.content) for h in bounded.results) == 6000
    assert bounded.results[2].content.endswith(LATER_MARKER)
    assert bounded.results[2].truncated is True
    assert len(bounded.results[0].title) == 200
    assert len(bounded.results[0].description) == 500
    assert len(bounded.results[0].source_paths) == 8
    assert bounded.total == 6

    small = result.model_copy(update={"results": tuple(_hit(i, "c" * 100) for i in range(6))})
    assert len(bound_for_model(small).results) == 4
    assert len(bound_for_model(small, max_records=2).results) == 2
    with pytest.raises(InvalidInputError):
        bound_for_model(small, max_records=0)
    with pytest.raises(InvalidInputError):
        bound_for_model({"results": []})  # type: ignore[arg-type]


def test_bound_for_model_applies_to_suggestions(tmp_path: Path, backend: Backend) -> None:
    docs = backend.open_docs(tmp_path)
    for i in range(3):
        docs.create(f"Doc {i}", f"body {i} " * 400)
    result = bound_for_model(docs.search("无匹配"), max_characters=1500)
    assert result.results == ()
    assert sum(len(s.content) for s in result.suggestions) <= 1500


def test_suggestion_not_marked_truncated_when_only_whitespace_collapsed(
    tmp_path: Path, backend: Backend
) -> None:
    docs = backend.open_docs(tmp_path)
    docs.create("Short", "line one\n\nline two")
    [suggestion] = docs.search("没有").suggestions
    assert suggestion.content == "line one line two"
    assert suggestion.truncated is False


def test_access_times_survive_folds_by_another_instance(tmp_path: Path, backend: Backend) -> None:
    a = backend.open_docs(tmp_path)
    b = backend.open_docs(tmp_path)
    doc = a.create("Kafka", "consumer lag").document
    for _ in range(3):
        a.search("kafka")  # journal lines
        seen = b.get(doc.id).last_accessed_at
        assert seen > doc.last_accessed_at
        b.create("Filler", "x")  # b folds the journal into index.json and removes it
        assert not backend.unfolded_access(b)
        assert a.get(doc.id).last_accessed_at == seen
        assert b.get(doc.id).last_accessed_at == seen
        doc = a.get(doc.id)


def test_search_does_not_wait_for_a_writer_holding_the_lock(tmp_path: Path) -> None:
    docs = open_docs(tmp_path)
    doc = docs.create("Kafka", "consumer lag").document
    with hold_lock(docs.lock_path):  # another process writing
        started = time.monotonic()
        result = docs.search("kafka")
        waited = time.monotonic() - started
    assert [h.id for h in result.results] == [doc.id]
    assert "Access times could not be recorded." in result.hint
    assert waited < 2.0  # the lock timeout is 10 s; a search waits at most 0.25 s
    assert docs.get(doc.id).last_accessed_at == doc.last_accessed_at
