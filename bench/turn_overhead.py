"""Per-turn overhead of the memory subgraph and of one recall call, memory sizes at their limits.

Setup (one root per embedder setting): USER.md and MEMORY.md filled to within one entry of
their 4,096 / 10,240-byte limits, a few Documents, a few active Memory Spaces, and one native
space holding ``--memories`` synthetic memories (the generator of ``bench/recall_scale.py``),
written through ``MemorySpaces.remember_many``.

1. begin + end, no recall, p50 / p95 over ``--turns`` turns:
   a. the direct ``begin_turn`` + ``end_turn`` calls, on threads whose Wake is unchanged (the
      steady state; a new thread every ``--thread-turns`` turns, its first turn untimed) and on
      a new thread each turn (reminder cue and Wake appended);
   b. a real parent ``StateGraph`` ``memory_begin → agent (ScriptedChatModel) → memory_end``
      against the same graph without the two memory nodes, interleaved turn by turn (the order
      alternates) so drift cancels; without a checkpointer and over ``mem.checkpointer()``
      (MnemosSaver; a new thread per turn). Both get the same 5-message input history.
   c. begin + end with the turn stored in the database for every process (issue 30) against
      the same turn kept in this process only (as before it), interleaved, steady threads.
   Goal: begin + end ≤ 5 ms p95.
2. One recall through the per-turn envelope: ``TurnRetrieval.recall`` on the 10k-memory native
   space, a fresh turn state and a distinct query per call (2-6 words of a stored memory plus
   one unrelated word), default embedder (WordLlama hybrid) and ``embedding.enabled=false``.
   Goal: ≤ 25 ms p95.
3. A ``create_agent`` turn (scripted model: one tool call, then the answer; a new thread every
   ``--thread-turns`` turns): the bare agent on LangGraph's ``SqliteSaver`` (a file) against the
   same agent with ``mem.tools()`` + ``mem.middleware()`` on ``mem.checkpointer()``; and a
   ``mnemon_remember`` turn against LangMem's ``create_manage_memory_tool`` create turn over an
   ``InMemoryStore`` indexed with the same embedder (WordLlama) on a ``SqliteSaver``. The four
   agents run ``--agent-turns`` turns per round for ``--rounds`` rounds, their order rotated
   each round; each figure is the median of the rounds' p50 / p95. Goals: ≤ 1.3x the bare
   agent (p50 and p95), remember ≤ 1.5x LangMem.
Idle reviews are delayed 10 minutes so none runs in the background during the timed loops (the
per-turn review hooks still run). Every measured loop runs an uncounted warm-up first (imports,
graph compilation, embedder load, SQLite caches). Temp roots live under the current directory
and are removed.

    python bench/turn_overhead.py [--turns 300] [--thread-turns 20] [--memories 10000]
                                   [--queries 300] [--no-keyword] [--agent-turns 150]
                                   [--rounds 3] [--agents-only]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore
from langmem import create_manage_memory_tool

from bench._common import FUNCTION as _FUNCTION
from bench._common import Corpus
from langgraph_mnemon import Mnemon
from langgraph_mnemon.adapters.embeddings import WordLlamaEmbedder
from langgraph_mnemon.graphs.turn import MnemonTurnState, begin_turn, end_turn
from langgraph_mnemon.memory_layers.turns import TurnRetrieval
from langgraph_mnemon.testing import ScriptedChatModel

WARMUP = 20
DOCUMENTS = 8
SPACES = 4  # active spaces in the catalog, the 10k-memory native one included
ENTRY = (
    "Rule {i}: service {i} deploys through the staging pipeline, needs two approvals, and is "
    "rolled back with the runbook in docs/ops; on-call pages the owner after {i} minutes. "
)
USER = (
    "Fact {i}: the user prefers concise answers, metric units, ISO dates, British spelling and "
    "examples in Python {i}; reviews happen on weekday mornings. "
)


def fill(mem: Mnemon, target: str, template: str) -> None:
    """Add ~200-byte entries until the next one would not fit: the file ends up near full."""
    limit = mem.runtime.limit(target)
    i = 0
    while True:
        text = (template.format(i=i) * 2)[:200]
        if mem.runtime.usage(target).used + len(text) + 4 > limit:
            return
        mem.runtime.add(target, text)
        i += 1


def build_root(tmp: Path, memories: int, *, embedding: bool) -> tuple[Mnemon, str, list[str]]:
    """A root at its limits; returns the host, the big space id and stored memory texts."""
    tmp.mkdir()
    mem = Mnemon.open(
        tmp / "root",
        workspace=tmp,
        embedding={"enabled": embedding},
        idle_review={"delay_ms": 600_000},  # the hooks run every turn; no review fires mid-run
    )
    fill(mem, "user", USER)
    fill(mem, "memory", ENTRY)
    for d in range(DOCUMENTS):
        body = f"## Design {d}\n\n" + f"Queue service {d}: decisions, owners and runbooks. " * 60
        mem.documents.create(f"Design {d}", body, description=f"Design notes of service {d}")
    big = mem.spaces.create_space("Project", "Project knowledge", active=True).space
    assert big is not None
    corpus = Corpus()
    stored: list[str] = []
    for start in range(0, memories, 1000):
        items = [corpus.memory(i) for i in range(start, min(memories, start + 1000))]
        assert all(r.committed for r in mem.spaces.remember_many(items, space_id=big.id))
        stored.extend(str(i["content"]) for i in items[:20])
    for s in range(SPACES - 1):
        space = mem.spaces.create_space(f"Team {s}", f"Team {s} notes", active=True).space
        assert space is not None
        items = [corpus.memory(i) for i in range(50)]
        mem.spaces.remember_many(items, space_id=space.id)
    return mem, big.id, stored


def queries(stored: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    corpus = Corpus(seed=seed)
    out: set[str] = set()
    while len(out) < count:
        words = [w for w in rng.choice(stored).rstrip(".").lower().split() if w not in _FUNCTION]
        k = rng.randint(2, min(6, len(words)))
        out.add(" ".join([*rng.sample(words, k), corpus.word()]))
    return sorted(out, key=lambda _: rng.random())


def p50_p95(samples: list[float]) -> tuple[float, float]:
    ms = [s * 1000 for s in samples]
    return statistics.median(ms), statistics.quantiles(ms, n=20)[-1]


def history(mem: Mnemon, thread: str) -> list[BaseMessage]:
    """A steady-state history: one earlier turn (cue + Wake delivered) and a new user message."""
    first = [HumanMessage("Where do deploy rules live?")]
    turn, sent = begin_turn(mem, thread, first, agent_id="main", root=True)
    done = [*first, *sent, AIMessage("In docs/ops.")]
    end_turn(mem, thread, turn, done, root=True)
    return [*done, HumanMessage("And who approves a release?")]


def direct(mem: Mnemon, turns: int, per_thread: int, *, new_thread: bool) -> list[float]:
    reply = AIMessage("Two approvers from the owning team.")
    out: list[float] = []
    base: list[BaseMessage] = []
    for i in range(WARMUP + turns):
        if new_thread:
            thread, messages = f"new-{i}", [HumanMessage("Who approves a release?")]
        else:
            thread = f"steady-{i // per_thread}"
            if i % per_thread == 0:
                base = history(mem, thread)  # untimed first turn of the thread
            messages = base
        t0 = time.perf_counter()
        turn, sent = begin_turn(mem, thread, messages, agent_id="main", root=True)
        end_turn(mem, thread, turn, [*messages, *sent, reply], root=True)
        took = time.perf_counter() - t0
        assert new_thread or not sent  # steady state: nothing changed, nothing appended
        if i >= WARMUP:
            out.append(took)
    return out


def share_row(mem: Mnemon, turns: int, per_thread: int) -> Row:
    """begin + end with the turn stored for every process (``share=True``, since issue 30)
    against the same turn kept in this process only (how every turn was kept before), steady
    threads, interleaved turn by turn (the order alternates)."""
    reply = AIMessage("Two approvers from the owning team.")
    out: dict[bool, list[float]] = {True: [], False: []}
    bases: dict[bool, list[BaseMessage]] = {}
    for i in range(WARMUP + turns):
        for share in (True, False) if i % 2 else (False, True):
            thread = f"share-{share}-{i // per_thread}"
            if i % per_thread == 0:
                bases[share] = history(mem, thread)  # untimed first turn of the thread
            t0 = time.perf_counter()
            turn, sent = begin_turn(
                mem, thread, bases[share], agent_id="main", root=True, share=share
            )
            end_turn(mem, thread, turn, [*bases[share], *sent, reply], root=True)
            if i >= WARMUP:
                out[share].append(time.perf_counter() - t0)
    label = "begin_turn + end_turn, turn stored for every process vs kept in process, steady"
    return (label, p50_p95(out[True]), p50_p95(out[False]), "–")


def graphs(mem: Mnemon, checkpointer: Any) -> tuple[Any, Any, ScriptedChatModel]:
    model = ScriptedChatModel(script=lambda msgs: AIMessage(content=f"ok {len(msgs)}"))

    def agent(state: MnemonTurnState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    with_memory = StateGraph(MnemonTurnState)
    with_memory.add_node("memory_begin", mem.turn_graph())
    with_memory.add_node("agent", agent)
    with_memory.add_node("memory_end", mem.turn_graph())
    with_memory.add_edge(START, "memory_begin")
    with_memory.add_edge("memory_begin", "agent")
    with_memory.add_edge("agent", "memory_end")
    with_memory.add_edge("memory_end", END)
    bare = StateGraph(MnemonTurnState)
    bare.add_node("agent", agent)
    bare.add_edge(START, "agent")
    bare.add_edge("agent", END)
    return (
        with_memory.compile(checkpointer=checkpointer),
        bare.compile(checkpointer=checkpointer),
        model,
    )


def graph_pair(
    mem: Mnemon, turns: int, per_thread: int, *, saver: bool
) -> tuple[list[float], list[float]]:
    ours, bare, model = graphs(mem, mem.checkpointer() if saver else None)
    base = history(mem, "graph")
    times: dict[str, list[float]] = {"ours": [], "bare": []}
    for i in range(WARMUP + turns):
        order = (("ours", ours), ("bare", bare)) if i % 2 else (("bare", bare), ("ours", ours))
        for name, graph in order:
            # Same input history on both; a new thread per turn keeps the checkpoint small.
            thread = f"{name}-{i}" if saver else f"graph-{i // per_thread}"
            cfg = {"configurable": {"thread_id": thread}}
            t0 = time.perf_counter()
            out = graph.invoke({"messages": base}, cfg)
            took = time.perf_counter() - t0
            assert out["messages"][-1].type == "ai"
            if i >= WARMUP:
                times[name].append(took)
        model.calls.clear()
    assert mem.turns.live_turns == []
    return times["ours"], times["bare"]


def recall(mem: Mnemon, space_id: str, texts: list[str]) -> list[float]:
    out: list[float] = []
    for i, text in enumerate(texts):
        state = TurnRetrieval([space_id], turn_id=uuid.uuid4().hex, view_id="bench")
        t0 = time.perf_counter()
        evidence = state.recall(mem.spaces, text)
        took = time.perf_counter() - t0
        assert evidence.status == "searched", evidence.status
        if i >= WARMUP:
            out.append(took)
    return out


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}: deploys through staging, two approvals."


def _one_call(name: str, args: Any) -> Any:
    """A scripted model: one call of ``name`` (``args(i)``), then an answer from its result."""
    count = [0]

    def script(messages: list[BaseMessage]) -> AIMessage:
        if messages[-1].type == "tool":
            return AIMessage(f"Done: {str(messages[-1].content)[:80]}")
        count[0] += 1
        call = {"name": name, "args": args(count[0]), "id": f"c{count[0]}", "type": "tool_call"}
        return AIMessage("", tool_calls=[call])

    return ScriptedChatModel(script=script)


def _fact(i: int) -> str:
    return f"The user's build {i} runs on runner pool {i % 7} and must finish in {i % 50} min."


def agents(tmp: Path, stack: Any) -> dict[str, tuple[Any, str]]:
    """The four agents of section 3, by name, with the request each turn sends."""
    mem = Mnemon.open(tmp / "agents", workspace=tmp, idle_review={"delay_ms": 600_000})
    stack.callback(mem.close)
    mem.runtime.add("user", "Prefers concise answers.")
    embedder = WordLlamaEmbedder()
    dims = len(embedder.embed_query("probe"))
    saver = stack.enter_context(SqliteSaver.from_conn_string(str(tmp / "bare.db")))
    lm_saver = stack.enter_context(SqliteSaver.from_conn_string(str(tmp / "langmem.db")))
    store = InMemoryStore(index={"dims": dims, "embed": embedder.embed_documents})
    manage = create_manage_memory_tool(namespace=("memories",), store=store)
    remember = ("mnemon_remember", lambda i: {"content": _fact(i), "category": "fact"})
    create = ("manage_memory", lambda i: {"content": _fact(i), "action": "create"})
    look = ("lookup", lambda i: {"key": f"k{i}"})
    ours = {"tools": [lookup, *mem.tools()], "middleware": [mem.middleware()]}
    built = {
        "bare agent, SqliteSaver": create_agent(_one_call(*look), [lookup], checkpointer=saver),
        "ours: tools + middleware + MnemosSaver": create_agent(
            _one_call(*look), **ours, checkpointer=mem.checkpointer()
        ),
        "LangMem create turn, InMemoryStore, SqliteSaver": create_agent(
            _one_call(*create), [manage], store=store, checkpointer=lm_saver
        ),
        "ours: mnemon_remember turn": create_agent(
            _one_call(*remember), **ours, checkpointer=mem.checkpointer()
        ),
    }
    requests = {name: "Look k up." for name in built}
    requests["LangMem create turn, InMemoryStore, SqliteSaver"] = "Remember my build."
    requests["ours: mnemon_remember turn"] = "Remember my build."
    return {name: (agent, requests[name]) for name, agent in built.items()}


def agent_rounds(
    tmp: Path, turns: int, rounds: int, per_thread: int
) -> dict[str, tuple[float, float]]:
    """Median over ``rounds`` of each agent's p50 / p95 turn time (order rotated per round)."""
    import contextlib

    with contextlib.ExitStack() as stack:
        named = agents(tmp, stack)
        names = list(named)
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                agent, request = named[name]
                times: list[float] = []
                for i in range(WARMUP + turns):
                    cfg = {"configurable": {"thread_id": f"{r}-{i // per_thread}"}}
                    t0 = time.perf_counter()
                    out = agent.invoke({"messages": [HumanMessage(request)]}, cfg)
                    took = time.perf_counter() - t0
                    assert out["messages"][-1].content.startswith("Done"), name
                    if i >= WARMUP:
                        times.append(took)
                found[name].append(p50_p95(times))
    return {
        name: (
            statistics.median(p for p, _ in runs),
            statistics.median(q for _, q in runs),
        )
        for name, runs in found.items()
    }


Row = tuple[str, tuple[float, float], "tuple[float, float] | None", str]


def agent_rows(figures: dict[str, tuple[float, float]], turns: int, rounds: int) -> list[Row]:
    """The section-3 rows: each agent against its baseline (medians of ``rounds`` rounds)."""
    pairs = [
        ("ours: tools + middleware + MnemosSaver", "bare agent, SqliteSaver", "≤ 1.3x"),
        ("ours: mnemon_remember turn", "LangMem create turn, InMemoryStore, SqliteSaver", "≤ 1.5x"),
    ]
    return [
        (
            f"create_agent turn, {ours} vs {base} ({turns} turns x {rounds} rounds, rotated)",
            figures[ours],
            figures[base],
            goal,
        )
        for ours, base, goal in pairs
    ]


def print_table(rows: list[Row]) -> None:
    """The one table: p50 / p95, the baseline's, what we add and the ratios."""
    print(
        "| measurement | p50 ms | p95 ms | baseline p50 ms | baseline p95 ms | added p50 ms "
        "| ratio p50 | ratio p95 | goal |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, (p50, p95), base, goal in rows:
        if base is None:
            print(f"| {name} | {p50:.2f} | {p95:.2f} | – | – | – | – | – | {goal} |")
        else:
            print(
                f"| {name} | {p50:.2f} | {p95:.2f} | {base[0]:.2f} | {base[1]:.2f} "
                f"| {p50 - base[0]:.2f} | {p50 / base[0]:.2f}x | {p95 / base[1]:.2f}x | {goal} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="counted turns per row")
    parser.add_argument(
        "--thread-turns", type=int, default=20, help="turns per thread in the steady-state rows"
    )
    parser.add_argument("--memories", type=int, default=10_000, help="memories in the big space")
    parser.add_argument("--queries", type=int, default=300, help="counted recall queries")
    parser.add_argument("--agent-turns", type=int, default=150, help="create_agent turns / round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the create_agent rows")
    parser.add_argument(
        "--agents-only", action="store_true", help="only the create_agent rows (section 3)"
    )
    parser.add_argument(
        "--no-keyword", action="store_true", help="skip the embedding.enabled=false recall row"
    )
    args = parser.parse_args()
    if args.agents_only:
        began = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
            figures = agent_rounds(Path(tmp), args.agent_turns, args.rounds, args.thread_turns)
        print(f"Turn overhead, create_agent rows only ({time.perf_counter() - began:.0f} s)\n")
        print_table(agent_rows(figures, args.agent_turns, args.rounds))
        return
    rows: list[Row] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        mem, space_id, stored = build_root(Path(tmp) / "dense", args.memories, embedding=True)
        try:
            status = mem.status()
            env = (
                f"USER.md {status.runtime.user.used:,} / {status.runtime.user.limit:,} B, "
                f"MEMORY.md {status.runtime.memory.used:,} / {status.runtime.memory.limit:,} B, "
                f"{status.documents.active} Documents "
                f"({status.documents.active_bytes.used:,} B), "
                f"{status.spaces.active if status.spaces else 0} active Memory Spaces, "
                f"{args.memories:,} memories in the recalled native space "
                f"(+{(SPACES - 1) * 50} elsewhere)"
            )
            figures = agent_rounds(Path(tmp), args.agent_turns, args.rounds, args.thread_turns)
            # beside them, the bare agent's whole turn (the baseline columns of these rows)
            bare = figures["bare agent, SqliteSaver"]
            for new_thread, label in ((False, "steady thread"), (True, "new thread")):
                took = direct(mem, args.turns, args.thread_turns, new_thread=new_thread)
                rows.append(
                    (
                        f"begin_turn + end_turn, {label} (baseline: the bare agent's whole turn)",
                        p50_p95(took),
                        bare,
                        "p95 ≤ 5 ms",
                    )
                )
            rows.append(share_row(mem, args.turns, args.thread_turns))
            for saver, label in ((False, "no checkpointer"), (True, "MnemosSaver")):
                ours, bare = graph_pair(mem, args.turns, args.thread_turns, saver=saver)
                rows.append(
                    (
                        f"graph invoke with memory nodes vs without, {label}",
                        p50_p95(ours),
                        p50_p95(bare),
                        "–",
                    )
                )
            texts = queries(stored, WARMUP + args.queries, seed=11)
            dense = recall(mem, space_id, texts)
            rows.append(
                (
                    f"recall, {args.memories:,}-memory native space, WordLlama",
                    p50_p95(dense),
                    None,
                    "p95 ≤ 25 ms",
                )
            )
        finally:
            mem.close()
        if not args.no_keyword:
            mem, space_id, stored = build_root(Path(tmp) / "kw", args.memories, embedding=False)
            try:
                texts = queries(stored, WARMUP + args.queries, seed=12)
                keyword = recall(mem, space_id, texts)
                rows.append(
                    (
                        f"recall, {args.memories:,}-memory native space, embedding off",
                        p50_p95(keyword),
                        None,
                        "p95 ≤ 25 ms",
                    )
                )
            finally:
                mem.close()
    print(
        f"Turn overhead ({args.turns} turns, {args.queries} recall queries per row, "
        f"{WARMUP} uncounted warm-up each; {time.perf_counter() - began:.0f} s)\n"
    )
    print(env + "\n")
    print_table(rows + agent_rows(figures, args.agent_turns, args.rounds))


if __name__ == "__main__":
    main()
