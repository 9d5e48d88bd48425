"""The store's index: what an item is indexed by (``index`` fields), what embeds it (the index
``embed``) and how a query search ranks every item of the namespace. Real SQLite files and the
real PostgreSQL server, real embedders (functions and LangChain ``Embeddings`` objects)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from langchain_core.embeddings import Embeddings

from langgraph_mnemon import Mnemon, MnemonConfig
from langgraph_mnemon.adapters.embeddings import (
    FunctionEmbedder,
    LangChainEmbedder,
    build_embedder,
    embedder_from,
)
from langgraph_mnemon.config import EmbeddingConfig
from langgraph_mnemon.errors import ConflictError, InvalidInputError, ProviderError
from langgraph_mnemon.store import MnemonStore
from langgraph_mnemon.store._index import StoreIndex

# Words that mean the same thing share one axis: a "semantic" model whose answers are known.
_CONCEPTS = {
    "cat": 0, "feline": 0, "kitten": 0,
    "dog": 1, "canine": 1, "puppy": 1,
    "invoice": 2, "billing": 2, "payment": 2,
    "garden": 3, "tomato": 3, "plants": 3,
}  # fmt: skip
_DIMS = 6


def _concept_vectors(texts: Sequence[str]) -> list[list[float]]:
    out = []
    for text in texts:
        vector = [0.0] * _DIMS
        for word in text.lower().replace(".", " ").replace('"', " ").split():
            axis = _CONCEPTS.get(word.strip(",:{}?!"))
            vector[axis if axis is not None else _DIMS - 1] += 1.0 if axis is not None else 0.05
        out.append(vector)
    return out


class ConceptEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over :data:`_CONCEPTS` (counts its calls)."""

    model = "concepts-v1"

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return _concept_vectors(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return _concept_vectors([text])[0]


@pytest.fixture
def host(tmp_path: Path, database_url: str) -> Iterator[Mnemon]:
    with Mnemon.open(tmp_path / "m", database_url=database_url) as mem:
        yield mem


def _keys(items: Sequence[Any]) -> list[str]:
    return [i.key for i in items]


def _vector_models(mem: Mnemon, space_id: str) -> set[str]:
    with mem.database.read() as conn:
        rows = conn.execute(
            sa.text("SELECT DISTINCT model FROM mnemon_insight_vectors WHERE space_id = :s"),
            {"s": space_id},
        )
        return {r[0] for r in rows}


# --------------------------------------------------------------------------------------------
# index fields


def test_index_text_follows_langgraph_paths() -> None:
    value = {
        "title": "Tea",
        "meta": {"lang": "en", "n": 3},
        "tags": [{"name": "green"}, {"name": "hot"}],
        "steps": ["boil", "steep"],
        "flag": True,
    }
    index = StoreIndex()
    assert index.text(value) is None  # the whole value: its stored JSON text
    assert index.text(value, ["title"]) == "Tea"
    assert index.text(value, ["meta.lang", "meta.n"]) == "en\n3"
    assert index.text(value, ["tags[*].name"]) == "green\nhot"
    assert index.text(value, ["steps[0]", "steps[-1]"]) == "boil\nsteep"
    assert index.text(value, ["{title,flag}"]) == "Tea\nTrue"
    assert index.text(value, ["meta"]) == '{"lang": "en", "n": 3}'
    assert index.text(value, ["missing", "steps[9]"]) == ""
    assert StoreIndex.of({"fields": ["steps[*]"]}).text(value) == "boil\nsteep"


def test_put_index_fields_decide_what_is_searchable(host: Mnemon) -> None:
    store = host.store()
    ns = ("kb",)
    value = {"title": "zebra crossing rules", "body": "marmalade recipe", "n": 1}
    store.put(ns, "t", value, index=["title"])
    store.put(ns, "w", {"title": "weather", "body": "marmalade on toast"})  # whole value
    assert store.get(ns, "t").value == value  # type: ignore[union-attr]
    by_title = store.search(ns, query="zebra crossing")
    assert by_title[0].key == "t"
    assert by_title[0].score > by_title[1].score  # type: ignore[operator]
    by_body = store.search(ns, query="marmalade")
    assert _keys(by_body) == ["w", "t"]  # "t" holds the word, but only its title is indexed
    assert by_body[1].score < by_body[0].score / 2  # type: ignore[operator]
    assert _keys(store.search(ns, query="crossing", limit=1)) == ["t"]
    # the same value put again with other fields is indexed anew, not skipped as identical
    store.put(ns, "t", value, index=["body"])
    assert store.search(ns, query="marmalade recipe")[0].key == "t"


def test_config_fields_apply_unless_a_put_names_its_own(host: Mnemon) -> None:
    store = host.store(index={"fields": ["summary"]})
    ns = ("docs",)
    store.put(ns, "a", {"summary": "quarterly revenue", "raw": "penguin colony census"})
    store.put(ns, "b", {"summary": "office move", "raw": "revenue"}, index=["raw"])
    assert store.search(ns, query="penguin colony")[0].score == 0.0
    assert store.search(ns, query="quarterly revenue")[0].key == "a"
    # b's summary is not indexed (its put named "raw"): nothing matches, nothing scores
    assert [i.score for i in store.search(ns, query="office move")] == [0.0, 0.0]
    assert host.store().search(ns, query="revenue", limit=1)[0].key in {"a", "b"}


def test_items_with_nothing_to_index_are_stored_but_never_ranked(host: Mnemon) -> None:
    store = host.store()
    ns = ("kb",)
    store.put(ns, "empty", {"body": "lighthouse keeper"}, index=["title"])
    store.put(ns, "hidden", {"title": "lighthouse"}, index=False)
    store.put(ns, "shown", {"title": "harbour"})
    assert _keys(store.search(ns, query="lighthouse keeper")) == ["shown"]
    assert _keys(store.search(ns, query="anything at all", limit=50)) == ["shown"]
    assert sorted(_keys(store.search(ns))) == ["empty", "hidden", "shown"]
    assert store.get(ns, "empty").value == {"body": "lighthouse keeper"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"dims": 4}, "goes with index"),
        ({"embed": _concept_vectors}, "needs index\\['dims'\\]"),
        ({"embed": _concept_vectors, "dims": 0}, "positive integer"),
        ({"fields": []}, "non-empty list"),
        ({"fields": ["a[x]"]}, "not an index"),
        ({"fields": ["a{b"]}, "field list"),
        ({"distance_type": "l2"}, "'l2' is not available"),
        ({"fields": ["a"], "text_fields": ["b"]}, "give only fields"),
        ({"metric": "cosine"}, "unknown index settings metric"),
        ({"embed": 42, "dims": 3}, "embed must be"),
        (["title"], "index must be a dict"),
    ],
)
def test_bad_index_configs_are_typed_errors(mem: Mnemon, index: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        mem.store(index=index)


def test_bad_put_index_fields_are_typed_errors(mem: Mnemon) -> None:
    store = mem.store()
    for fields in (["a[1"], [""], ["x]"], "title"):
        with pytest.raises(InvalidInputError):
            store.put(("kb",), "k", {"a": 1}, index=fields)  # type: ignore[arg-type]
    assert store.get(("kb",), "k") is None


# --------------------------------------------------------------------------------------------
# the index embed


def test_store_embeds_with_its_own_model_for_puts_and_queries(host: Mnemon) -> None:
    embeddings = ConceptEmbeddings()
    store = host.store(index={"dims": _DIMS, "embed": embeddings, "fields": ["text"]})
    ns = ("pets",)
    store.put(ns, "c", {"text": "The kitten sleeps all day."})
    store.put(ns, "d", {"text": "The puppy chews shoes."})
    store.put(ns, "i", {"text": "Payment is due on Monday."})
    assert embeddings.calls == 3
    # no keyword in common: only the store's model relates "feline" to "kitten"
    assert store.search(ns, query="feline")[0].key == "c"
    assert store.search(ns, query="canine")[0].key == "d"
    assert asyncio.run(store.asearch(ns, query="billing"))[0].key == "i"
    space = MnemonStore.space_id_for(ns)
    assert _vector_models(host, space) == {"ConceptEmbeddings:concepts-v1"}
    # in this process the space keeps that model: the default store and the agent's recall
    # over it embed their queries with it too
    assert host.store().search(ns, query="feline")[0].key == "c"
    recalled = host.spaces.search("feline", space_ids=[space], policy="exhaustive-v1")
    assert recalled.results[0].content == "The kitten sleeps all day."  # recall shows the text


def test_function_and_async_function_embedders(host: Mnemon) -> None:
    async def embed_async(texts: Sequence[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return _concept_vectors(texts)

    sync_store = host.store(index={"dims": _DIMS, "embed": _concept_vectors})
    sync_store.put(("fn", "sync"), "g", {"text": "tomato"})
    sync_store.put(("fn", "sync"), "x", {"text": "invoice"})
    assert sync_store.search(("fn", "sync"), query="plants")[0].key == "g"
    async_store = host.store(index={"dims": _DIMS, "embed": embed_async})
    asyncio.run(async_store.aput(("fn", "async"), "g", {"text": "garden"}))
    async_store.put(("fn", "async"), "x", {"text": "dog"})  # sync call: its own loop
    found = asyncio.run(async_store.asearch(("fn", "async"), query="tomato plants"))
    assert _keys(found) == ["g", "x"]
    models = _vector_models(host, MnemonStore.space_id_for(("fn", "async")))
    assert models == {FunctionEmbedder(embed_async).model_id}


def test_dims_are_checked_and_a_wrong_size_stores_nothing(host: Mnemon) -> None:
    store = host.store(index={"dims": 3, "embed": _concept_vectors})
    with pytest.raises(ProviderError, match="6-dimensional vectors but the index config says"):
        store.put(("sized",), "k", {"text": "cat"})
    assert store.get(("sized",), "k") is None


def test_two_embed_models_on_one_namespace_conflict(mem: Mnemon) -> None:
    first = mem.store(index={"dims": _DIMS, "embed": _concept_vectors})
    first.put(("shared",), "k", {"text": "cat"})
    other = mem.store(index={"dims": _DIMS, "embed": ConceptEmbeddings()})
    with pytest.raises(ConflictError, match="use one index embed per namespace"):
        other.put(("shared",), "k2", {"text": "dog"})
    same = mem.store(index={"dims": _DIMS, "embed": _concept_vectors})
    same.put(("shared",), "k3", {"text": "kitten"})  # the same model: no conflict


def test_vectors_of_another_size_are_never_compared(tmp_path: Path, database_url: str) -> None:
    root = tmp_path / "m"
    with Mnemon.open(root, database_url=database_url) as mem:
        small = mem.store(index={"dims": _DIMS, "embed": ConceptEmbeddings()})
        small.put(("mixed",), "c", {"text": "The kitten sleeps."})
        mem.store().put(("plain",), "p", {"text": "The kitten sleeps."})  # host: WordLlama 256
    # another process without that store: its host embedder (256-d) meets 6-d vectors
    with Mnemon.open(root, database_url=database_url) as mem:
        store = mem.store()
        assert _keys(store.search(("mixed",), query="kitten")) == ["c"]  # by keyword
        assert store.search(("mixed",), query="feline")[0].key == "c"  # ranked, no error
        assert sorted(_keys(store.search((), query="kitten sleeps"))) == ["c", "p"]
        recall = mem.spaces.search("kitten", policy="exhaustive-v1")
        assert {r.content for r in recall.results} == {"The kitten sleeps."}


def test_provider_model_strings_go_through_init_embeddings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    embedder = embedder_from("openai:text-embedding-3-small", dims=1536)
    assert embedder.model_id == "openai:text-embedding-3-small"
    inner = embedder.inner  # type: ignore[attr-defined]
    assert isinstance(inner, LangChainEmbedder)
    assert type(inner.embeddings).__name__ == "OpenAIEmbeddings"
    assert inner.embeddings.model == "text-embedding-3-small"  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="install the provider's LangChain package"):
        embedder_from("cohere:embed-english-v3.0", dims=1024)
    with pytest.raises(InvalidInputError, match="check the provider name"):
        embedder_from("nosuch:model", dims=8)
    with pytest.raises(InvalidInputError, match="provider:model"):
        embedder_from("text-embedding-3-small", dims=8)
    # the host's embedder takes the same form
    host_embedder = build_embedder(EmbeddingConfig(embed="openai:text-embedding-3-small"))
    assert host_embedder is not None
    assert host_embedder.model_id == "openai:text-embedding-3-small"
    with pytest.raises(InvalidInputError, match=r"embedding\.embed must be 'provider:model'"):
        MnemonConfig(embedding={"embed": "openai"})  # type: ignore[arg-type]
    assert build_embedder(EmbeddingConfig()).model_id.startswith("wordllama")  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# query search ranks every item


def test_a_vague_query_with_a_filter_ranks_all_the_filtered_items(host: Mnemon) -> None:
    store = host.store()
    ns = ("tickets",)
    for i in range(12):
        store.put(ns, f"g{i}", {"text": f"Ticket {i}: tomato seedlings wilt", "team": "garden"})
    for i in range(8):
        store.put(ns, f"b{i}", {"text": f"Ticket {i}: invoice totals are wrong", "team": "billing"})
    found = store.search(ns, query="what is going on", filter={"team": "garden"}, limit=20)
    assert sorted(_keys(found)) == sorted(f"g{i}" for i in range(12))
    scores = [i.score for i in found]
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # limit and offset page through the same ranking
    pages = [store.search(ns, query="what is going on", filter={"team": "garden"}, limit=5,
                          offset=o) for o in (0, 5, 10)]  # fmt: skip
    assert [k for page in pages for k in _keys(page)] == _keys(found)


def test_matching_items_come_first_then_every_other_item(host: Mnemon) -> None:
    store = host.store()
    ns = ("notes",)
    for i in range(30):
        store.put(ns, f"n{i}", {"text": f"Routine standup note number {i}."})
    store.put(ns, "hit", {"text": "The firewall blocks port 8443 on the staging cluster."})
    store.put(ns, "near", {"text": "Staging cluster maintenance is on Sunday."})
    found = store.search(ns, query="firewall port 8443 staging", limit=100)
    assert len(found) == 32
    assert _keys(found)[:2] == ["hit", "near"]
    scores = [i.score for i in found]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert scores[1] > scores[2]  # type: ignore[operator]
    assert asyncio.run(store.asearch(ns, query="firewall port 8443 staging", limit=100)) == found
    # a different query ranks the rest differently (by the same scorer)
    assert store.search(ns, query="standup note number 7", limit=1)[0].key == "n7"


def test_every_namespace_under_the_prefix_is_ranked(host: Mnemon) -> None:
    store = host.store()
    store.put(("org", "a"), "x", {"text": "Quarterly planning offsite in Lisbon."})
    store.put(("org", "b"), "y", {"text": "Printer on floor two is out of toner."})
    store.put(("elsewhere",), "z", {"text": "Quarterly planning offsite in Lisbon."})
    found = store.search(("org",), query="Lisbon offsite")
    assert [(i.namespace, i.key) for i in found] == [(("org", "a"), "x"), (("org", "b"), "y")]


def test_a_large_namespace_is_ranked_through_in_chunks(host: Mnemon) -> None:
    from langgraph.store.base import PutOp

    store = host.store()
    ns = ("big",)
    ops = [
        PutOp(ns, f"k{i}", {"text": f"Routine log line {i}.", "flag": i in (5, 350, 690)})
        for i in range(700)
    ]
    store.batch(ops)
    flagged = store.search(ns, query="unrelated words", filter={"flag": True}, limit=10)
    assert sorted(_keys(flagged)) == ["k350", "k5", "k690"]
    everything = store.search(ns, query="log line 42", limit=700)
    assert len(everything) == 700
    assert everything[0].key == "k42"
    page = store.search(ns, query="log line 42", limit=5, offset=640)
    assert _keys(page) == _keys(everything[640:645])


def test_a_graph_node_searches_the_indexed_store_through_its_runtime(host: Mnemon) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        question: str
        answer: list[str]

    async def answer(state: State, runtime: Runtime) -> dict[str, Any]:
        assert runtime.store is not None
        hits = await runtime.store.asearch(("faq",), query=state["question"], limit=3)
        return {"answer": [h.key for h in hits]}

    store = host.store(index={"dims": _DIMS, "embed": ConceptEmbeddings(), "fields": ["q"]})
    store.put(("faq",), "pets", {"q": "Can I bring my puppy?", "a": "Yes, on a leash."})
    store.put(("faq",), "pay", {"q": "How do I pay an invoice?", "a": "By card."})
    store.put(("faq",), "cats", {"q": "Is a kitten welcome?", "a": "Yes."})
    builder = StateGraph(State)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    graph = builder.compile(store=store)
    out = asyncio.run(graph.ainvoke({"question": "canine allowed?", "answer": []}))
    assert out["answer"][0] == "pets"
    assert sorted(out["answer"]) == ["cats", "pay", "pets"]
    out = asyncio.run(graph.ainvoke({"question": "billing question", "answer": []}))
    assert out["answer"][0] == "pay"


def test_the_index_config_and_embeddings_are_shown_back_as_given(host: Mnemon) -> None:
    mem = host
    embeddings = ConceptEmbeddings()
    given = {"dims": _DIMS, "embed": embeddings, "text_fields": ["title"]}
    store = mem.store(index=given)
    assert store.index_config == given  # as LangGraph's stores show it
    assert store.embeddings is embeddings
    assert store.index.fields == ("title",)  # text_fields: LangGraph's SQLite store's name
    store.put(("docs",), "a", {"title": "garden", "body": "invoice"})
    assert store.search(("docs",), query="tomato")[0].score > 0  # the title is indexed
    fields_only = mem.store(index={"fields": ["body"]})
    assert fields_only.index_config == {"fields": ["body"]}
    assert fields_only.embeddings is None  # the host's embedder serves it
    assert mem.store().index_config is None
    assert mem.store().embeddings is None
