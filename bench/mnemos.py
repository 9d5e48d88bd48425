"""Mnemos on a long scripted task: the context the model sees, checkpoints, compactions, resume.

A ``create_agent`` agent works through a scripted ``--steps``-step task (200 by default) at a
``--window``-token context window (50,000): one tool call per model call, then a final answer.
Its application tools are defined here: ``read_file`` (1-4 KB of source), ``search_code``,
``edit_file`` (sometimes ``Error: ... not found``) and ``run_tests`` (failures end with
``exit code 1``), all answering from a simulated project, so nothing touches the disk but the
databases. The user's first message (content blocks) states the goal and two constraint
sentences. The model is a deterministic script (``ScriptedChatModel``); each reply reports
``usage_metadata`` with ``input_tokens`` = the size of the messages it was given, estimated with
tiktoken ``cl100k_base`` when that encoding loads, else characters / 4 (the table says which).

Two agents run the same script, interleaved run by run (the order alternates):

- with Mnemos: ``Mnemon.open(tmp, mnemos={"context_window_tokens": WINDOW})``,
  ``tools=[*app_tools, *mem.tools()]``, ``middleware=[mem.middleware()]``,
  ``checkpointer=mem.checkpointer()`` (MnemosSaver);
- without: the same agent and tools without ours, on LangGraph's ``SqliteSaver`` (a file).

Reported: per model call, the context the model sees (max and p95, tokens); Mnemos checkpoints
(native CheckpointNodes; LangGraph ones are counted apart) and compactions (a ``before_model``
update that replaces the history); REM warnings; the share of the goal, the two constraints and
the first lines of the last five tool results found verbatim in ``mem.mnemos.resume(thread)``
after the run (must be 100 %); the time of the middleware's own work per model call (the
observation, at EMERGENCY the compaction, the system sections; the model call excluded),
p50 / p95 ms, measured by wrapping its hooks; and the median wall time of a whole run with and
without Mnemos.
Idle reviews are delayed 10 minutes so none runs during a run; the checkpoint cooldown is the
default (120 s). Temp roots live under the current directory and are removed.

Goals: no call at or over 95 % of the window with Mnemos, and the resume block holds the goal,
the constraints and the last five results (100 %). Every figure is the median over the runs of
each run's figure (max, p95, p50 of that run); the wall-time ratio is the median of the paired
runs' ratios. The default run takes about a minute on a quiet 2-core machine.

    python bench/mnemos.py [--steps 200] [--window 50000] [--runs 3] [--seed 7] [--quick]

``--quick``: one run of each at 80 steps and a 20,000-token window.

``--passes`` (issue 33) measures instead one tending pass (what Mnemos does before every model
call) over one new tool-call group after 50, 300 and 1,000 messages, incremental (the cursor of
the previous pass) against a full rescan (the behaviour before), and a pass that finds nothing
new. Goals: the 1,000 case within 1.3x the 50 case; nothing new ≤ 0.5 ms.

    python bench/mnemos.py --passes [--runs 3] [--pass-count 100]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_mnemon import Mnemon
from langgraph_mnemon.errors import NotFoundError
from langgraph_mnemon.testing import ScriptedChatModel

GOAL = "Port the CSV importer in src/importer to the streaming parser and get the test suite green."
CONSTRAINTS = (
    "Never change the public API of the importer package.",
    "Always keep the existing error messages byte for byte.",
)
MODULES = ("reader", "parser", "schema", "rows", "writer", "errors", "cli", "dialects")
SOURCES = tuple(f"src/importer/{m}.py" for m in MODULES)
TESTS = tuple(f"tests/test_{m}.py" for m in MODULES)
THREAD = "bench-task"
WORDS = (
    "row",
    "field",
    "delimiter",
    "quote",
    "buffer",
    "chunk",
    "stream",
    "header",
    "schema",
    "column",
    "value",
    "decode",
    "encode",
    "offset",
    "line",
    "record",
    "dialect",
    "strict",
    "lenient",
    "yield",
    "close",
    "flush",
    "error",
    "index",
    "cursor",
    "batch",
)


# --------------------------------------------------------------------------------------------
# Token counting: what the model "sees" and what it reports as usage


class TokenCount:
    """Tokens of a message list: tiktoken cl100k_base when its encoding loads, else chars / 4."""

    def __init__(self) -> None:
        self.encode: Callable[[str], list[int]] | None = None
        self.name = "characters / 4"
        try:
            import tiktoken

            self.encode = tiktoken.get_encoding("cl100k_base").encode
            self.name = "tiktoken cl100k_base"
        except Exception:  # not installed, or its encoding file cannot be fetched offline
            self.encode = None

    def text(self, text: str) -> int:
        if self.encode is not None:
            return len(self.encode(text, disallowed_special=()))
        return round(len(text) / 4)

    def messages(self, messages: Sequence[BaseMessage]) -> int:
        return sum(self.text(_visible(m)) for m in messages)


def _visible(message: BaseMessage) -> str:
    """The text a provider would be sent for a message: its content and its tool calls."""
    content = message.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    calls = getattr(message, "tool_calls", None)
    return text + (json.dumps(calls, ensure_ascii=False) if calls else "")


# --------------------------------------------------------------------------------------------
# The simulated project and the application tools


class Project:
    """A deterministic project the tools answer from: file revisions and test runs."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.revision = dict.fromkeys((*SOURCES, *TESTS), 1)
        self.runs = 0
        self.edits = 0
        self.answers: list[str] = []  # every tool answer, in order (the resume check reads it)

    def _lines(self, count: int, tag: str) -> list[str]:
        rng = random.Random(f"{tag}:{count}")
        out = []
        for i in range(count):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
            out.append(f"{i + 1:4d}    {words}")
        return out

    def read(self, path: str) -> str:
        rev = self.revision.get(path)
        if rev is None:
            return f"Error: no such file {path}"
        lines = 30 + (hash_of(path) % 60)
        body = self._lines(lines, f"{path}@{rev}")
        return "\n".join([f"# {path} (rev {rev}, {lines} lines)", *body])

    def search(self, query: str) -> str:
        hits = [p for p in (*SOURCES, *TESTS) if hash_of(p + query) % 3 == 0] or [SOURCES[0]]
        lines = [f"{len(hits)} files match {query!r}"]
        for p in hits:
            for n in range(1 + hash_of(p) % 4):
                lines.append(f"{p}:{10 + 7 * n}: {query} = {' '.join(WORDS[n : n + 6])}")
        return "\n".join(lines)

    def edit(self, path: str, old: str, new: str) -> str:
        self.edits += 1
        if path not in self.revision:
            return f"Error: no such file {path}"
        if self.edits % 7 == 0:  # a stale view of the file: the edit does not apply
            return f"Error: old text not found in {path} (edit {self.edits}); read the file again"
        self.revision[path] += 1
        return (
            f"Edited {path}: rev {self.revision[path]} (edit {self.edits}), "
            f"1 hunk, -{len(old.splitlines())} +{len(new.splitlines())} lines\n"
            f"@@ replaced {old[:60]!r} with {new[:60]!r}"
        )

    def test(self, target: str) -> str:
        self.runs += 1
        rng = random.Random(f"run:{self.runs}:{target}")
        total = 20 + rng.randint(0, 40)
        failed = 0 if self.runs % 3 == 0 else rng.randint(1, 4)
        status = "passed" if not failed else f"{failed} failed"
        head = f"pytest {target} run {self.runs}: {total - failed} passed, {status}"
        lines = [head]
        for i in range(total):
            name = f"{target}::test_{rng.choice(WORDS)}_{i}"
            lines.append(f"{name} {'FAILED' if i < failed else 'PASSED'}")
        for i in range(failed):
            lines.extend(
                [
                    f"____ test_{i} ____",
                    "    def test_stream(self):",
                    ">       assert rows == expected",
                    f"E       AssertionError: row {i} differs at column {rng.randint(1, 9)}",
                ]
            )
        lines.append(f"exit code {1 if failed else 0}")
        return "\n".join(lines)


def hash_of(text: str) -> int:
    """A stable hash (Python's ``hash`` of a str changes per process)."""
    return sum((i + 1) * ord(c) for i, c in enumerate(text))


def app_tools(project: Project) -> list[BaseTool]:
    """The application tools of the bench, answering from ``project``."""

    def keep(answer: str) -> str:
        project.answers.append(answer)
        return answer

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return keep(project.read(path))

    @tool
    def search_code(query: str) -> str:
        """Search the repository for a symbol or text."""
        return keep(project.search(query))

    @tool
    def edit_file(path: str, old: str, new: str) -> str:
        """Replace ``old`` with ``new`` in a file."""
        return keep(project.edit(path, old, new))

    @tool
    def run_tests(target: str) -> str:
        """Run the tests of one test file."""
        return keep(project.test(target))

    return [read_file, search_code, edit_file, run_tests]


# --------------------------------------------------------------------------------------------
# The scripted model


def plan(step: int, seed: int) -> tuple[str, dict[str, str], str]:
    """Step ``step`` of the script: a tool, its arguments and the assistant's short plan."""
    rng = random.Random(seed * 100_003 + step)
    module = MODULES[(step // 5) % len(MODULES)]
    source, test = f"src/importer/{module}.py", f"tests/test_{module}.py"
    kind = step % 5
    if kind == 0:
        return "read_file", {"path": source}, f"Reading {source} before porting it."
    if kind == 1:
        query = f"{module}_{rng.choice(WORDS)}"
        return "search_code", {"query": query}, f"Looking for callers of {query}."
    if kind == 2:
        old, new = f"for line in {rng.choice(WORDS)}:", f"for row in stream_{rng.choice(WORDS)}():"
        args = {"path": source, "old": old, "new": new}
        return "edit_file", args, f"Switching {module} to the streaming parser."
    if kind == 3:
        return "run_tests", {"target": test}, f"Running {test}."
    return "read_file", {"path": test}, f"Checking what {test} expects."


def scripted_model(steps: int, seed: int, tokens: TokenCount, seen: list[int]) -> Any:
    """One tool call per model call for ``steps`` calls, then a final answer."""
    calls = [0]

    def script(messages: list[BaseMessage]) -> AIMessage:
        step = calls[0]
        calls[0] += 1
        size = tokens.messages(messages)
        seen.append(size)
        if step < steps:
            name, args, text = plan(step, seed)
            call = {"name": name, "args": args, "id": f"call_{step}", "type": "tool_call"}
            reply = AIMessage(content=text, tool_calls=[call])
        else:
            reply = AIMessage(content="The importer now streams rows; all tests pass.")
        out = tokens.text(_visible(reply))
        reply.usage_metadata = {
            "input_tokens": size,
            "output_tokens": out,
            "total_tokens": size + out,
        }
        return reply

    return ScriptedChatModel(script=script)


def first_message() -> HumanMessage:
    """The user's request: the goal and two constraint sentences, as content blocks."""
    return HumanMessage(content=[{"type": "text", "text": " ".join([GOAL, *CONSTRAINTS])}])


# --------------------------------------------------------------------------------------------
# One run


@dataclass
class Run:
    """What one run measured."""

    wall: float
    seen: list[int]
    hook: list[float] = field(default_factory=list)
    compactions: int = 0
    warnings: int = 0
    checkpoints: int = 0
    langgraph_checkpoints: int = 0
    found: dict[str, tuple[int, int]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def timed_hook(middleware: Any, run: Run) -> None:
    """Time the middleware's own work per model call (the instance's hooks, not the class's).

    The work inside ``wrap_model_call`` minus the model call itself, plus ``before_model``
    when the middleware has one (older versions observed the task there). A compaction is a
    model request shorter than the state's messages; a REM warning a longer one after the
    turn's first call (whose extra messages are the Wake).
    """
    pending = [0.0]  # before_model time of the call being made
    if type(middleware).before_model is not AgentMiddleware.before_model:
        hook = middleware.before_model

        def before_model(state: Any, runtime: Any) -> Any:
            t0 = time.perf_counter()
            update = hook(state, runtime)
            pending[0] = time.perf_counter() - t0
            messages = (update or {}).get("messages") or []
            if any(isinstance(m, RemoveMessage) for m in messages):
                run.compactions += 1
            elif messages:
                run.warnings += 1
            return update

        middleware.before_model = before_model
    wrap = middleware.wrap_model_call

    def wrap_model_call(request: Any, handler: Callable[[Any], Any]) -> Any:
        model = [0.0, len(request.messages)]

        def timed(req: Any) -> Any:
            model[1] = len(req.messages)
            t0 = time.perf_counter()
            try:
                return handler(req)
            finally:
                model[0] += time.perf_counter() - t0

        t0 = time.perf_counter()
        response = wrap(request, timed)
        run.hook.append(time.perf_counter() - t0 - model[0] + pending[0])
        pending[0] = 0.0
        if model[1] < len(request.messages):
            run.compactions += 1
        elif model[1] > len(request.messages) and len(run.hook) > 1:
            run.warnings += 1
        return response

    middleware.wrap_model_call = wrap_model_call


def invoke(agent: Any, run: Run) -> dict[str, Any]:
    cfg = {"configurable": {"thread_id": THREAD}, "recursion_limit": 10_000}
    t0 = time.perf_counter()
    out = agent.invoke({"messages": [first_message()]}, cfg)
    run.wall = time.perf_counter() - t0
    last = out["messages"][-1]
    assert last.type == "ai", last.type  # the script's final answer ends the run
    assert not last.tool_calls
    return out


def run_with(tmp: Path, steps: int, window: int, seed: int, tokens: TokenCount) -> Run:
    """The agent with Mnemos: our tools, middleware and checkpointer."""
    project, run = Project(seed), Run(wall=0.0, seen=[])
    mem = Mnemon.open(
        tmp / "root",
        workspace=tmp,  # no git repository: the checkpoint's git state stays empty
        mnemos={"context_window_tokens": window},
        idle_review={"delay_ms": 600_000},
    )
    try:
        middleware = mem.middleware()
        timed_hook(middleware, run)
        agent = create_agent(
            scripted_model(steps, seed, tokens, run.seen),
            tools=[*app_tools(project), *mem.tools()],
            middleware=[middleware],
            checkpointer=mem.checkpointer(),
        )
        invoke(agent, run)
        records = mem.mnemos.checkpoints(THREAD, limit=100_000)
        run.checkpoints = sum(r.source == "mnemos" for r in records)
        run.langgraph_checkpoints = sum(r.source == "langgraph" for r in records)
        try:
            resume = mem.mnemos.resume(THREAD)
        except NotFoundError:
            resume = ""
        check_resume(resume, project.answers, run)
    finally:
        mem.close()
    return run


def run_without(tmp: Path, steps: int, seed: int, tokens: TokenCount) -> Run:
    """The same agent and application tools on LangGraph's SqliteSaver, no Mnemos."""
    project, run = Project(seed), Run(wall=0.0, seen=[])
    tmp.mkdir(parents=True, exist_ok=True)
    with SqliteSaver.from_conn_string(str(tmp / "checkpoints.db")) as saver:
        agent = create_agent(
            scripted_model(steps, seed, tokens, run.seen),
            tools=app_tools(project),
            checkpointer=saver,
        )
        invoke(agent, run)
    return run


def check_resume(resume: str, answers: list[str], run: Run) -> None:
    """Substring tests: the goal, each constraint, the first line of the last five results."""
    wanted = {
        "goal": [GOAL],
        "constraints": list(CONSTRAINTS),
        "last five results": [a.splitlines()[0] for a in answers[-5:]],
    }
    for name, texts in wanted.items():
        hits = [t for t in texts if t in resume]
        run.found[name] = (len(hits), len(texts))
        run.missing.extend(f"{name}: {t}" for t in texts if t not in resume)


# --------------------------------------------------------------------------------------------
# The table


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else float(values[0])


def spread(values: Sequence[int]) -> str:
    """One number when every run agrees, else ``min–max``."""
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def share(found: Sequence[tuple[int, int]]) -> str:
    """``hits/total (share)`` of the worst run (every run when they agree)."""
    hits, total = min(found, key=lambda f: f[0] / f[1])
    agree = len(set(found)) == 1
    return f"{hits}/{total} ({hits / total:.0%}){'' if agree else ', worst run'}"


# --- one tending pass against the history's length (issue 33) ---------------------------------


def _pass_group(i: int) -> list[BaseMessage]:
    """One model call's worth of new messages: a read with its answer (usage reported)."""
    call = {"name": "read_file", "args": {"path": f"src/m{i % 60}.py"}, "id": f"k{i}"}
    usage = {"input_tokens": 900 + 40 * i, "output_tokens": 5, "total_tokens": 905 + 40 * i}
    return [
        AIMessage("", tool_calls=[call], id=f"ai{i}", usage_metadata=usage),
        ToolMessage(f"def f{i}():\n    return {i}\n" * 8, tool_call_id=f"k{i}", id=f"tm{i}"),
    ]


def _pass_times(mem: Any, task: str, length: int, passes: int, cursor: bool) -> list[float]:
    """Seconds per pass over one new tool-call group after ``length`` messages."""
    from langgraph_mnemon.nodes.mnemos import Tending, tend_task

    history: list[BaseMessage] = [first_message()]
    i = 0
    while len(history) < length:
        history += _pass_group(i)
        i += 1
    tending = Tending() if cursor else None
    tend_task(mem, task, history, tending=tending)
    times = []
    for _ in range(passes):
        history = [*history, *_pass_group(i)]
        i += 1
        began = time.perf_counter()
        tend_task(mem, task, history, tending=tending)
        times.append(time.perf_counter() - began)
    return times


def _idle_times(mem: Any, length: int, passes: int) -> list[float]:
    """Seconds per pass that finds nothing new (the cursor already covers the history)."""
    from langgraph_mnemon.nodes.mnemos import Tending, tend_task

    history: list[BaseMessage] = [first_message()]
    for i in range(length // 2):
        history += _pass_group(i)
    tending = Tending()
    tend_task(mem, "idle", history, tending=tending)
    times = []
    for _ in range(passes):
        began = time.perf_counter()
        tend_task(mem, "idle", history, tending=tending)
        times.append(time.perf_counter() - began)
    return times


def passes_table(args: Any) -> None:
    """The tending pass at 50, 300 and 1,000 messages: incremental against a full rescan."""
    lengths = (50, 300, 1_000)
    got: dict[tuple[int, bool], list[tuple[float, float]]] = {}
    idle: list[float] = []
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        mem = Mnemon.open(Path(tmp), idle_review={"delay_ms": 600_000}, mnemos={"git_state": False})
        for r in range(args.runs):
            for length in lengths if r % 2 == 0 else lengths[::-1]:
                for cursor in (True, False) if r % 2 == 0 else (False, True):
                    task = f"r{r}-{length}-{cursor}"
                    times = _pass_times(mem, task, length, args.passes, cursor)
                    got.setdefault((length, cursor), []).append(
                        (statistics.median(times) * 1000, p95(times) * 1000)
                    )
            idle.append(statistics.median(_idle_times(mem, 300, args.passes)) * 1000)
        mem.close()
    _print_passes(args, lengths, got, statistics.median(idle))


def _print_passes(
    args: Any,
    lengths: Sequence[int],
    got: dict[tuple[int, bool], list[tuple[float, float]]],
    idle: float,
) -> None:
    def fig(length: int, cursor: bool, k: int) -> float:
        return statistics.median(f[k] for f in got[(length, cursor)])

    print("| history, messages | incremental p50 ms | p95 ms | vs 50 (p50) | full rescan p50 ms "
          "| p95 ms | full / incremental (p50) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for length in lengths:
        inc, full = fig(length, True, 0), fig(length, False, 0)
        print(
            f"| {length:,} | {inc:.2f} | {fig(length, True, 1):.2f} | "
            f"{inc / fig(lengths[0], True, 0):.2f}x | {full:.2f} | {fig(length, False, 1):.2f} "
            f"| {full / inc:.2f}x |"
        )
    print(f"\nA pass with nothing new (300 messages): p50 {idle * 1000:.1f} µs (goal ≤ 0.5 ms).")
    print(
        f"\nOne pass = mem.mnemos observing one new read (an AI message with usage and its tool "
        f"answer) after the history, deriving nodes, logging the fatigue reading (one SQLite "
        f"transaction, WAL + NORMAL). Incremental: the cursor (SeenMessages) from the previous "
        f"pass; full rescan: none (the behaviour before issue 33). Medians over {args.runs} "
        f"runs of {args.passes} passes, order alternated. Command: python bench/mnemos.py "
        f"--passes --runs {args.runs} --pass-count {args.passes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="tool calls before the answer")
    parser.add_argument("--window", type=int, default=50_000, help="context window, tokens")
    parser.add_argument("--runs", type=int, default=3, help="runs of each agent (>= 3 for docs)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1 run, 80 steps, 20k window")
    parser.add_argument("--passes", action="store_true", help="one tending pass vs history")
    parser.add_argument("--pass-count", dest="passes_n", type=int, default=100)
    args = parser.parse_args()
    if args.passes:
        args.passes = args.passes_n
        passes_table(args)
        return
    if args.quick:
        args.steps, args.window, args.runs = 80, 20_000, 1
    tokens = TokenCount()
    ours: list[Run] = []
    base: list[Run] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        for i in range(args.runs):
            order = ("ours", "base") if i % 2 == 0 else ("base", "ours")
            for name in order:
                where = Path(tmp) / f"{name}-{i}"
                if name == "ours":
                    ours.append(run_with(where, args.steps, args.window, args.seed, tokens))
                else:
                    base.append(run_without(where, args.steps, args.seed, tokens))
    took = time.perf_counter() - began
    report(args, tokens, ours, base, took)


def report(args: Any, tokens: TokenCount, ours: list[Run], base: list[Run], took: float) -> None:
    window = args.window
    print(
        f"Mnemos on a scripted {args.steps}-step task at a {window:,}-token window "
        f"({args.runs} run(s) of each, interleaved; {took:.0f} s)\n"
    )
    print(
        f"Tokens: {tokens.name}. One model call per step plus the final answer "
        f"({len(ours[0].seen)} calls a run). Context = every message the model is sent "
        "(system sections, Wake and plugin messages included).\n"
    )

    # Every figure is the median over the runs of that run's figure.
    def med(runs: list[Run], fn: Callable[[Run], float]) -> float:
        return statistics.median(fn(r) for r in runs)

    max_base, max_ours = med(base, lambda r: max(r.seen)), med(ours, lambda r: max(r.seen))
    p95_base, p95_ours = med(base, lambda r: p95(r.seen)), med(ours, lambda r: p95(r.seen))
    hook50 = med(ours, lambda r: statistics.median(r.hook) * 1000)
    hook95 = med(ours, lambda r: p95(r.hook) * 1000)
    wall_ours, wall_base = med(ours, lambda r: r.wall), med(base, lambda r: r.wall)
    wall_ratio = statistics.median(o.wall / b.wall for o, b in zip(ours, base, strict=True))
    shares = {name: share([r.found[name] for r in ours]) for name in ours[0].found}
    every = share([tuple(map(sum, zip(*r.found.values(), strict=True))) for r in ours])

    def ctx(value: float) -> str:
        return f"{value:,.0f} ({value / window:.0%})"

    rows = [
        ("context per model call, max, tokens (% of window)", ctx(max_base),
         ctx(max_ours), f"{max_ours / max_base:.2f}x"),
        ("context per model call, p95, tokens (% of window)", ctx(p95_base),
         ctx(p95_ours), f"{p95_ours / p95_base:.2f}x"),
        ("model calls over the window per run",
         spread([sum(s > window for s in r.seen) for r in base]),
         spread([sum(s > window for s in r.seen) for r in ours]), "–"),
        ("model calls at or over 95 % of the window (EMERGENCY floor) per run",
         spread([sum(s >= 0.95 * window for s in r.seen) for r in base]),
         spread([sum(s >= 0.95 * window for s in r.seen) for r in ours]), "–"),
        ("Mnemos checkpoints (native) per run", "–", spread([r.checkpoints for r in ours]), "–"),
        ("LangGraph checkpoints in MnemosSaver per run", "–",
         spread([r.langgraph_checkpoints for r in ours]), "–"),
        ("compactions per run", "–", spread([r.compactions for r in ours]), "–"),
        ("REM warnings per run", "–", spread([r.warnings for r in ours]), "–"),
        *[(f"resume holds the {name}", "–", text, "–") for name, text in shares.items()],
        ("resume holds goal + constraints + last five results", "–", every, "must be 100 %"),
        ("memory work per model call (middleware, model excluded), p50 / p95 ms", "–",
         f"{hook50:.2f} / {hook95:.2f}", "–"),
        (f"whole run wall time, median of {args.runs}, s", f"{wall_base:.2f}",
         f"{wall_ours:.2f}", f"{wall_ratio:.2f}x"),
    ]  # fmt: skip
    print("| measurement | without Mnemos | with Mnemos | ratio / goal |")
    print("|---|---:|---:|---:|")
    for name, without, with_, ratio in rows:
        print(f"| {name} | {without} | {with_} | {ratio} |")
    missing = sorted({m for r in ours for m in r.missing})
    if missing:
        print("\nNot found in the resume block:")
        for line in missing:
            print(f"- {line}")


if __name__ == "__main__":
    main()
