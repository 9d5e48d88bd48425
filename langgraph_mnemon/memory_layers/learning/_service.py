"""The learning service: a thread's new messages -> validated, receipted Memory Space writes.

A pass (:meth:`Learning.learn`, or the learning graph's nodes one step at a time):

1. :meth:`~Learning.begin` asks the kernel (Memory Spaces write, *automatic* trigger: a pass
   is never a person's explicit write, so ``manual`` and ``off`` channels refuse it and the
   pass says why), reads the messages the thread's earlier passes did not read (plugin
   messages, system messages and tool results never count), and claims the thread in the
   database so that two replicas never learn one message twice;
2. an extractor finds candidates (the offline heuristic, or the worker model);
3. :meth:`~Learning.similar` retrieves the learned memories each candidate resembles;
4. a proposer decides add / update / supersede / skip per candidate (the heuristic:
   a correction supersedes the memory it corrects, anything else is added);
5. :meth:`~Learning.commit` validates every proposal and writes what passes, one
   :class:`LearnReceipt` per change or refusal.

Validation (the host's, whatever proposed): at most ``max_writes`` changes per pass; a text of
at most :data:`MAX_LEARNED_CHARS` characters; a space the scope can see; an ``update`` or
``supersede`` target that is a current memory of that space; no duplicate of a current memory
or of an earlier write of the pass. An instruction-shaped text is stored as a quotation
(:func:`render_statement`). A refused proposal changes nothing; the others go on.

Example:
    >>> learning = mem.learning            # the scope's service
    >>> done = learning.learn("thread-1", messages)
    >>> [(r.action, r.status) for r in done.receipts]
    [('add', 'committed')]
    >>> learning.undo(done.pass_id).status
    'undone'
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_mnemon.config import LearningConfig
from langgraph_mnemon.contracts import Scope, check_text
from langgraph_mnemon.errors import InvalidInputError, MnemonError, NotFoundError, ProviderError
from langgraph_mnemon.memory_layers.kernel import Kernel, acting, refusal
from langgraph_mnemon.memory_layers.learning._heuristic import content_words, extract_candidates
from langgraph_mnemon.memory_layers.learning._models import (
    MAX_LEARNED_CHARS,
    Candidate,
    LearnMessage,
    LearnPass,
    LearnReceipt,
    Proposal,
    category_of,
)
from langgraph_mnemon.memory_layers.learning._statement import clean_line, render_statement
from langgraph_mnemon.memory_layers.learning._store import LearnPasses
from langgraph_mnemon.memory_layers.messages import MessageText, read_message
from langgraph_mnemon.memory_layers.spaces import MemoryRecord, MemorySpaces, learned_space_id

__all__ = ["Learning", "PassContext", "check_thread", "learned_space_id"]

_NORMAL = re.compile(r"[\W_]+", re.UNICODE)
_GENERIC_SPEAKERS = frozenset({"", "user", "human", "assistant", "ai"})
SUPERSEDE_OVERLAP = 0.25
"""A correction supersedes the most similar learned memory sharing at least this share of its
content words (Jaccard); below it, the correction is added as a new memory."""


def check_thread(thread_id: Any) -> str:
    """``thread_id`` as a checked id (1-256 printable characters).

    Raises:
        InvalidInputError: it is not such a string.
    """
    text = check_text(thread_id, "thread_id")
    if not text.strip() or len(text) > 256 or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidInputError(
            f"thread_id must be 1-256 printable characters (got {text[:40]!r}); pass the "
            "LangGraph thread id of the conversation"
        )
    return text


def _normal(text: str) -> str:
    return _NORMAL.sub(" ", text.lower()).strip()


def _fingerprint(read: MessageText) -> str:
    """A message's stable key: its id when it has one, else its role and text."""
    if read.id:
        return "id:" + hashlib.sha256(read.id.encode()).hexdigest()[:30]
    return "tx:" + hashlib.sha256(f"{read.role}\x00{read.text}".encode()).hexdigest()[:30]


@dataclass
class PassContext:
    """A claimed pass: what it reads and where it writes (the graph carries it between nodes)."""

    record: LearnPass
    messages: list[LearnMessage]
    fingerprints: list[str]
    receipts: list[LearnReceipt] = field(default_factory=list)


class Learning:
    """Learning passes of one scope.

    Args:
        spaces: the scope's Memory Spaces view (writes land in its user's learned space).
        kernel: the host's kernel (every pass asks it).
        passes: where passes are recorded (:class:`LearnPasses`).
        scope: the scope the passes run in.
        settings: the ``learning`` section of the configuration.
        clock: UNIX seconds (tests pass their own).
    """

    def __init__(
        self,
        spaces: MemorySpaces,
        kernel: Kernel,
        passes: LearnPasses,
        scope: Scope,
        settings: LearningConfig | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.spaces, self.kernel, self.passes, self.scope = spaces, kernel, passes, scope
        self.settings = settings or LearningConfig()
        self.clock = clock or time.time

    # --- reading the thread ----------------------------------------------------------------

    def read(self, messages: Sequence[Any]) -> list[LearnMessage]:
        """The messages a pass may learn from: user and assistant words only (plugin messages,
        system messages, tool results and tool-call-only turns are no source)."""
        out: list[LearnMessage] = []
        for index, message in enumerate(messages):
            read = read_message(message)
            if read.is_plugin or read.role not in ("user", "assistant") or not read.text.strip():
                continue
            who = read.name if read.name else read.role
            out.append(
                LearnMessage(
                    role=read.role,
                    text=read.text[: self.settings.max_context_chars],
                    index=index,
                    fingerprint=_fingerprint(read),
                    who=who,
                )
            )
        return out

    def begin(
        self, thread_id: str, messages: Sequence[Any], extractor: str
    ) -> PassContext | LearnPass:
        """Ask the kernel, keep the unread messages and claim the thread.

        Returns:
            A :class:`PassContext` to extract from, or the finished :class:`LearnPass` when the
            pass ends here (refused by the kernel, nothing new, or already running elsewhere).

        Raises:
            InvalidInputError: ``thread_id`` is empty, too long or holds control characters.
        """
        thread = check_thread(thread_id)
        record = self._record(thread, extractor)
        why = self._refused()
        if why is not None:
            return self._finish(record, "refused", why, [], [])
        seen = self.passes.seen(self.scope, thread)
        fresh = [m for m in self.read(messages) if m.fingerprint not in seen]
        if not fresh:
            return self._finish(record, "skipped", "no new messages since the last pass", [], [])
        prints = [m.fingerprint for m in fresh]
        running = record.model_copy(update={"messages": len(fresh)})
        if not self.passes.claim(running, prints):
            return running.model_copy(
                update={"status": "skipped", "reason": "another pass of this thread is running"}
            )
        return PassContext(record=running, messages=fresh, fingerprints=prints)

    def _refused(self) -> str | None:
        if not self.settings.enabled:
            return "learning is switched off (learning.enabled=false, MNEMON_LEARNING__ENABLED)"
        decision = self.kernel.decide("memory_spaces", "write", "automatic")
        return None if decision.admitted else str(refusal(decision))

    def _record(self, thread: str, extractor: str) -> LearnPass:
        now = self.clock()
        return LearnPass(
            pass_id=uuid.uuid4().hex,
            thread_id=thread,
            user=self.scope.user,
            project=self.scope.project,
            extractor=extractor,
            status="running",
            started_at=now,
            finished_at=now,
        )

    # --- extracting and proposing (heuristic) ------------------------------------------------

    def extract(self, context: PassContext) -> list[Candidate]:
        """The offline extractor's candidates (see :mod:`._heuristic`)."""
        return extract_candidates(context.messages)

    def similar(
        self, candidates: Sequence[Candidate | Proposal], limit: int = 5
    ) -> list[list[MemoryRecord]]:
        """The current learned memories most like each candidate (empty when the user has no
        learned space yet, or recall is switched off)."""
        space = self._space(create=False)
        if space is None:
            return [[] for _ in candidates]
        return [self._nearest(c.content, space, limit) for c in candidates]

    def _nearest(self, text: str, space: str, limit: int) -> list[MemoryRecord]:
        """The current memories of ``space`` most like ``text`` (none when recall fails)."""
        try:
            return list(self.spaces.search(text, limit=limit, space_ids=[space]).results)
        except MnemonError:
            return []

    def propose(
        self, candidates: Sequence[Candidate], similar: Sequence[Sequence[MemoryRecord]]
    ) -> list[Proposal]:
        """The heuristic's proposals: a correction supersedes the learned memory it most
        overlaps (when the overlap is at least :data:`SUPERSEDE_OVERLAP`); the rest are adds."""
        out = []
        for candidate, rows in zip(candidates, similar, strict=True):
            target = _corrected(candidate, rows) if candidate.corrects else None
            out.append(
                Proposal(
                    action="supersede" if target else "add",
                    kind=candidate.kind,
                    content=candidate.content,
                    who=candidate.who,
                    when=candidate.when,
                    target_id=target,
                    reason="a correction of an earlier memory" if target else "",
                )
            )
        return out

    # --- committing ----------------------------------------------------------------------------

    def commit(self, context: PassContext, proposals: Sequence[Proposal]) -> LearnPass:
        """Validate every proposal and write what passes; record the pass.

        Returns:
            The finished :class:`LearnPass` with one receipt per proposal.
        """
        written: set[str] = set()
        with acting("automatic"):
            for proposal in proposals:
                receipt = self._apply(context, proposal, written)
                context.receipts.append(receipt)
        receipts = context.receipts
        status = "committed" if any(r.status == "committed" for r in receipts) else "skipped"
        reason = "" if receipts else "nothing worth keeping"
        return self._finish(context.record, status, reason, receipts, context.fingerprints)

    def fail(self, context: PassContext, why: str) -> LearnPass:
        """Record a pass that failed before it wrote (the model's output was unusable)."""
        return self._finish(context.record, "failed", why, context.receipts, context.fingerprints)

    def _finish(
        self,
        record: LearnPass,
        status: str,
        reason: str,
        receipts: Sequence[LearnReceipt],
        fingerprints: Sequence[str],
    ) -> LearnPass:
        done = record.model_copy(
            update={
                "status": status,
                "reason": reason,
                "receipts": tuple(receipts),
                "finished_at": self.clock(),
            }
        )
        # A host that writes nothing, or learns nothing, records no pass either.
        if status != "refused" or (self.kernel.write_enabled and self.settings.enabled):
            self.passes.save(done, fingerprints)
        return done

    def _apply(self, context: PassContext, proposal: Proposal, written: set[str]) -> LearnReceipt:
        base = {"action": proposal.action, "kind": proposal.kind}
        if proposal.action == "skip":
            return _receipt("skipped", proposal.reason or "the proposer chose to skip", **base)
        if len(written) >= self.settings.max_writes:
            why = f"at most {self.settings.max_writes} writes per pass (learning.max_writes)"
            return _receipt("rejected", why, **base)
        problem = _check_content(proposal)
        if problem:
            return _receipt("rejected", problem, **base)
        content, quoted = render_statement(proposal.content, proposal.who, limit=MAX_LEARNED_CHARS)
        if not quoted and proposal.who.lower() not in _GENERIC_SPEAKERS:
            content = f"{clean_line(proposal.who, 80)}: {content}"  # say who, e.g. "Caroline: I …"
        base.update(content=content, quoted=quoted)
        try:
            space = self._target_space(proposal)
            target = self._check_target(proposal, space)
            duplicate = self._duplicate(content, space, written)
            if duplicate:
                return _receipt(
                    "skipped", f"a duplicate of memory {duplicate}", space_id=space, **base
                )
            receipt = self._write(context, proposal, content, quoted, space, target)
        except MnemonError as exc:
            return _receipt("rejected", str(exc), **base)
        if receipt.status == "committed":
            written.add(_normal(content))
        return receipt

    # --- where and what to write ---------------------------------------------------------------

    def _space(self, *, create: bool) -> str | None:
        """The user's learned space id (created, through the placement rules, when asked)."""
        space_id = learned_space_id(self.scope)
        try:
            self.spaces.get_space(space_id)
            return space_id
        except NotFoundError:
            if not create:
                return None
        description = "What conversations taught: facts, preferences, decisions, plans, events."
        try:
            self.spaces.create_space(self.settings.space_name, description, space_id=space_id)
        except InvalidInputError:  # created meanwhile by another replica: the id is taken
            self.spaces.get_space(space_id)
        return space_id

    def _target_space(self, proposal: Proposal) -> str:
        """The space a proposal writes to: the learned space, or a space of this scope the
        proposer named (another scope's space is not found)."""
        if proposal.space_id and proposal.space_id != learned_space_id(self.scope):
            return self.spaces.get_space(proposal.space_id).id
        space = self._space(create=True)
        assert space is not None
        return space

    def _check_target(self, proposal: Proposal, space: str) -> str | None:
        if proposal.action == "add":
            return None
        if not proposal.target_id:
            raise InvalidInputError(f"an {proposal.action} needs the id of the memory it replaces")
        try:
            row = self.spaces.get(proposal.target_id, space_id=space)
        except ProviderError:
            raise ProviderError(
                f"space {space!r} keeps no history, so an {proposal.action} there would lose "
                "the memory it replaces; learn into a space on the native provider"
            ) from None
        except NotFoundError:
            raise NotFoundError(
                f"no memory {proposal.target_id!r} in this scope's space {space!r}; an "
                f"{proposal.action} must name a current memory"
            ) from None
        if row.status not in (None, "current"):
            raise InvalidInputError(
                f"memory {proposal.target_id!r} is {row.status}; only a current memory can be "
                "replaced"
            )
        return row.id

    def _duplicate(self, content: str, space: str, written: set[str]) -> str | None:
        key = _normal(content)
        if key in written:
            return "written earlier in this pass"
        # the space the proposal writes to, not always the learned one
        for row in self._nearest(content, space, 5):
            if _normal(row.content) == key:
                return row.id
        return None

    def _write(
        self,
        context: PassContext,
        proposal: Proposal,
        content: str,
        quoted: bool,
        space: str,
        target: str | None,
    ) -> LearnReceipt:
        kind = proposal.kind
        metadata = {
            "learned_from": context.record.thread_id,
            "learn_pass": context.record.pass_id,
            "who": proposal.who[:120],
            "kind": kind,
            "quoted": quoted,
        }
        if proposal.when:
            metadata["when"] = proposal.when[:64]
        fields: dict[str, Any] = {
            "space_id": space,
            "category": category_of(kind),
            "tags": ["learned", kind],
            "entities": [proposal.who[:120]] if proposal.who not in ("user", "assistant") else [],
            "source": "user" if proposal.who != "assistant" else "agent",
            "metadata": metadata,
        }
        if target is None:
            done = self.spaces.remember(content, **fields)
        else:
            done = self.spaces.supersede(target, content, **fields)
        return _receipt(
            done.status,
            done.message,
            action=proposal.action,
            kind=kind,
            content=content,
            quoted=quoted,
            memory_id=done.id,
            replaced_id=target,
            space_id=space,
            changed=done.changed,
        )

    # --- reading and undoing passes ----------------------------------------------------------

    def learn(self, thread_id: str, messages: Sequence[Any]) -> LearnPass:
        """Run one heuristic pass over ``messages`` (the thread's, in order).

        Args:
            thread_id: the conversation thread the messages belong to.
            messages: LangChain messages or their dict forms; earlier passes' messages are
                skipped.

        Returns:
            The recorded :class:`LearnPass` (``status`` and one receipt per proposal).

        Raises:
            InvalidInputError: a bad ``thread_id``.
        """
        context = self.begin(thread_id, messages, "heuristic")
        if isinstance(context, LearnPass):
            return context
        candidates = self.extract(context)
        return self.commit(context, self.propose(candidates, self.similar(candidates)))

    def list_passes(self, *, thread_id: str | None = None, limit: int = 20) -> list[LearnPass]:
        """This scope's passes, newest first (a management read: the kernel is not asked)."""
        if thread_id is not None:
            thread_id = check_thread(thread_id)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 500:
            raise InvalidInputError(f"limit must be an integer from 1 to 500 (got {limit!r})")
        return self.passes.list(self.scope, thread_id=thread_id, limit=limit)

    def counts(self) -> tuple[int, int]:
        """``(passes, memories learned)`` of this scope (a management read, one query)."""
        return self.passes.counts(self.scope)

    def get_pass(self, pass_id: str) -> LearnPass:
        """One pass of this scope.

        Raises:
            NotFoundError: no such pass here (another scope's passes are not found).
        """
        return self.passes.get(self.scope, check_text(pass_id, "pass_id")[:64])

    def undo(self, pass_id: str) -> LearnPass:
        """Revert one pass: its added memories are forgotten and what it superseded is current
        again. The kernel is asked for every write (Memory Spaces write, the caller's trigger).

        Returns:
            The pass, ``status="undone"``, its receipts followed by one ``undo`` receipt per
            reverted change (a change that cannot be reverted says why, e.g. a later pass
            superseded the memory: undo that pass first).

        Raises:
            NotFoundError: no such pass in this scope.
            ParticipationError: the kernel refused Memory Spaces writes.
            ReadOnlyError: writes are switched off.
        """
        record = self.get_pass(pass_id)
        if record.status == "undone":
            return record
        self.kernel.admit("memory_spaces", "write")
        undone = [self._revert(r) for r in reversed(record.learned)]
        done = record.model_copy(
            update={
                "status": "undone",
                "undone_at": self.clock(),
                "receipts": record.receipts + tuple(undone),
            }
        )
        self.passes.save(done)
        return done

    def _revert(self, receipt: LearnReceipt) -> LearnReceipt:
        base = {"action": "undo", "kind": receipt.kind, "content": receipt.content}
        ids = {"memory_id": receipt.memory_id, "replaced_id": receipt.replaced_id}
        try:
            self.spaces.forget(receipt.memory_id or "", space_id=receipt.space_id)
            if receipt.replaced_id:
                self.spaces.restore(receipt.replaced_id, space_id=receipt.space_id)
        except MnemonError as exc:
            why = f"not reverted: {exc}; undo the later pass that changed it first"
            return _receipt("rejected", why, space_id=receipt.space_id, **ids, **base)
        return _receipt("committed", "reverted", space_id=receipt.space_id, **ids, **base)


def _receipt(
    status: str, message: str, *, changed: bool | None = None, **fields: Any
) -> LearnReceipt:
    return LearnReceipt(
        status=status,
        message=message,
        changed=status == "committed" if changed is None else changed,
        revision=fields.get("memory_id") or "",
        **fields,
    )


def _check_content(proposal: Proposal) -> str | None:
    text = proposal.content
    if not text.strip():
        return "an empty text; a learned memory is one statement"
    if len(text) > MAX_LEARNED_CHARS:
        return (
            f"the text is {len(text):,} characters; a learned memory is one statement of at "
            f"most {MAX_LEARNED_CHARS:,}"
        )
    return None


def _corrected(candidate: Candidate, rows: Sequence[MemoryRecord]) -> str | None:
    """The id of the learned memory a correction replaces: the one sharing the largest share
    of content words with it, when that share reaches :data:`SUPERSEDE_OVERLAP`."""
    words = content_words(candidate.content)
    best, best_share = None, SUPERSEDE_OVERLAP
    for row in rows:
        other = content_words(row.content)
        share = len(words & other) / max(len(words | other), 1)
        if share >= best_share:
            best, best_share = row.id, share
    return best
