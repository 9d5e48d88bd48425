"""The offline extractor: first-person statements worth keeping, conservatively.

Without a model, a learning pass keeps only what a person plainly states about themselves or
their team, sentence by sentence, from the user's own messages (never the assistant's, never
the plugin's, never tool results):

* **explicit requests**: "remember that …", "don't forget …", "note that …";
* **identity and facts**: "my name is …", "my daughter is called …", "I'm allergic to …",
  "I work at …", "I live in …", "I'm a nurse", "I have two kids";
* **preferences**: "I prefer …", "I love …", "my favourite … is …" (about something named,
  not "I love it");
* **decisions**: "we decided …", "we agreed …", "we're going with …", "let's go with …";
* **plans**: "I'm planning to …", "we're going to …", "I intend to …";
* **events**: "I went to …", "we launched …", "yesterday I …";
* **corrections**: "actually …", "correction: …", "I meant …", "we changed our minds …": a
  correction supersedes the memory it corrects.

Precision over recall: questions, greetings, thanks, acknowledgements and sentences with fewer
than two content words are small talk and produce nothing; a message that asks not to be
remembered produces nothing.

Example:
    >>> [c.kind for c in extract_candidates([LearnMessage(
    ...     role="user", text="Hi! I'm allergic to peanuts. How are you?", index=0,
    ...     fingerprint="m0")])]
    ['fact']
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from langgraph_mnemon.memory_layers.activity import is_no_memory
from langgraph_mnemon.memory_layers.learning._models import Candidate, CandidateKind, LearnMessage
from langgraph_mnemon.memory_layers.learning._statement import clean_line

__all__ = ["content_words", "extract_candidates"]

# A sentence ends at . ! ? followed by a space or the end (so "x@evil.example" stays whole).
_SENTENCE = re.compile(r"(?:[^.!?。！？\n]|[.!?](?=\S))+(?:[.!?。！？]+|$)")
_FILLER = re.compile(
    r"^\s*(?:by\s+the\s+way|btw|also|oh|anyway|fyi|so|and|well|guess\s+what)\s*[-,:!]?\s+",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_EXPLICIT = re.compile(
    r"^\s*(?:(?:please|pls|also|and)\s+)?(?:remember|don'?t\s+forget|do\s+not\s+forget|"
    r"note|keep\s+in\s+mind|for\s+the\s+record)(?:\s+that)?\s*[:,]?\s+",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^\s*(?:(?:oh|no|sorry|wait|hmm)[,!]?\s+)*(?:actually|correction|scratch\s+that|"
    r"i\s+meant|to\s+correct\s+(?:myself|that)|update)\s*[:,;-]?\s+",
    re.IGNORECASE,
)
_CHANGED_MIND = re.compile(
    r"\b(?:changed\s+(?:our|my)\s+minds?|change\s+of\s+plans?|no\s+longer|not\s+anymore|"
    r"instead\s+of|rather\s+than|we\s+(?:switched|moved)\s+to)\b",
    re.IGNORECASE,
)
_KINDS: tuple[tuple[CandidateKind, re.Pattern[str]], ...] = (
    (
        "decision",
        re.compile(
            r"\b(?:we|i|the\s+team|our\s+team)\s+(?:have\s+|'ve\s+|just\s+|finally\s+)?"
            r"(?:decided|agreed|chose|settled\s+on|picked|voted)\b"
            r"|\b(?:we're|we\s+are|we'll|we\s+will)\s+go(?:ing)?\s+with\b"
            r"|\blet'?s\s+go\s+with\b|\bthe\s+decision\s+is\b|\bwe\s+will\s+use\b",
            re.IGNORECASE,
        ),
    ),
    (
        "preference",
        re.compile(
            r"\bi\s+(?:really\s+|much\s+|always\s+|also\s+)?(?:prefer|like|love|enjoy|hate|"
            r"dislike|adore|can'?t\s+stand)\b|\bi\s+(?:don'?t|do\s+not)\s+(?:like|eat|drink|"
            r"enjoy)\b|\bmy\s+(?:favou?rite|preferred)\b|\bi(?:'m|\s+am)\s+(?:a\s+)?"
            r"(?:vegetarian|vegan|pescatarian|teetotal)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "plan",
        re.compile(
            r"\b(?:i|we)(?:'m|'re|\s+am|\s+are)\s+(?:planning|hoping|aiming)\s+to\b"
            r"|\b(?:i|we)\s+(?:plan|intend|hope|aim)\s+to\b|\bmy\s+plan\s+is\b"
            # "going to" is a plan only with a time ("I'm going to fix it" is a request)
            r"|\b(?:i|we)(?:'m|'re|\s+am|\s+are)\s+going\s+to\b(?=.*\b(?:next|tomorrow|"
            r"tonight|soon|this\s+(?:week|weekend|month|year|summer|spring|fall|winter))\b)"
            r"|\b(?:next|this\s+coming)\s+(?:week|month|year|summer|spring|fall|winter)\s+"
            r"(?:i|we)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "fact",
        re.compile(
            r"\bmy\s+(?:name|daughter|son|kids?|children|wife|husband|partner|mom|mother|dad|"
            r"father|brother|sister|dog|cat|pet|birthday|email|phone|address|team|manager|boss|"
            r"company|job|role|title|allerg\w*|doctor|school|hometown)\b"
            r"|\bi(?:'m|\s+am)\s+(?:allergic|intolerant|diabetic|pregnant|married|divorced|"
            r"single|retired|based|from|originally)\b"
            r"|\bi(?:'m|\s+am)\s+(?:an?|the)\s+(?!bit\b|little\b|lot\b|fan\s+of\s+it\b)\w+"
            r"|\bi\s+(?:work|live|grew\s+up|was\s+born|study|studied|teach|moved)\b"
            r"|\bi\s+have\s+(?:an?|two|three|four|five|\d+)\s+(?!question|minute|second|idea)"
            r"\w+|\b(?:i'm|i\s+am)\s+\d+\s+years?\s+old\b",
            re.IGNORECASE,
        ),
    ),
    (
        "event",
        re.compile(
            r"\b(?:i|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+)?(?:went|visited|started|"
            r"finished|joined|bought|adopted|attended|met|won|graduated|painted|signed|"
            r"launched|shipped|traveled|travelled|ran|completed|published|released|hired|"
            r"celebrated|volunteered|lost|got)\b(?!')"
            r"|\b(?:yesterday|last\s+(?:week|weekend|month|year|night))\b.{0,40}\b(?:i|we)\b",
            re.IGNORECASE,
        ),
    ),
)
_SMALL_TALK = re.compile(
    r"^\s*(?:hi|hey|hello|thanks|thank\s+you|thx|ok(?:ay)?|cool|great|nice|sure|yes|yeah|"
    r"yep|no|nope|lol|haha|bye|good\s+(?:morning|night|evening)|sounds\s+good|got\s+it|"
    r"how\s+are\s+you|i'm\s+(?:good|fine|great|ok|okay|well|tired|doing)|me\s+too)\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "so",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "from",
        "by",
        "about",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "i",
        "i'm",
        "me",
        "my",
        "mine",
        "we",
        "we're",
        "our",
        "you",
        "your",
        "it",
        "its",
        "it's",
        "this",
        "that",
        "these",
        "those",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "there",
        "here",
        "what",
        "which",
        "who",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "not",
        "no",
        "yes",
        "just",
        "really",
        "very",
        "too",
        "also",
        "will",
        "would",
        "can",
        "could",
        "should",
        "have",
        "has",
        "had",
        "get",
        "got",
        "go",
        "going",
        "went",
        "like",
        "love",
        "want",
        "so",
        "much",
        "more",
        "some",
        "any",
        "all",
        "one",
        "thing",
        "things",
        "stuff",
        "actually",
        "remember",
        "please",
        "that's",
        "think",
        "know",
        "okay",
        "ok",
    ]
)
_VAGUE_OBJECTS = re.compile(
    r"\b(?:like|love|prefer|enjoy|hate)\s+(?:it|that|this|them|those|you|him|her)\b\W*$"
    # a reaction to what the other person said, not a fact about the speaker
    r"|\b(?:like|love|enjoy|hate)\s+(?:that|how|the\s+way)\s+(?:you|it|they|this|that)\b"
    r"|\b(?:like|love|enjoy)\s+the\s+\w+(?:\s+and\s+\w+)?\s+(?:it|they|this|that)\s+\w+",
    re.IGNORECASE,
)
# Showing, feeling and fragments: chat about the moment, not a fact to keep.
_CHITCHAT = re.compile(
    r"^\s*(?:to|check\s+out|look\s+at|here's|here\s+is|looky|i\s+feel|i\s+felt|"
    r"i\s+think|i\s+guess|i\s+hope\s+you|i\s+bet)\b",
    re.IGNORECASE,
)
_DEMONSTRATIVE = re.compile(r"\b(?:this|that|these|those|your)\b", re.IGNORECASE)
# The task at hand (an error, a failing build): state of the work, not a memory of the person.
_TASK_CHATTER = re.compile(
    r"\b(?:error|errors|bug|bugs|exception|traceback|stack\s*trace|crash(?:es|ed)?|"
    r"warnings?|tests?|build|compil\w+|deploy(?:ed|ing)?|commit|branch|PR|pull\s+request|"
    r"function|file|line\s+\d+)\b",
    re.IGNORECASE,
)
# A sentence about "it" / "that" / "they" means nothing once the conversation is gone.
_PRONOUN_SUBJECT = re.compile(
    r"^\s*(?:it|it's|its|that|that's|this|this's|they|they're|they've|those|these|"
    r"seeing|having|being)\b",
    re.IGNORECASE,
)
MIN_CONTENT_WORDS = 2


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that carry meaning (stop words left out)."""
    return {w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP}


def _sentences(text: str) -> Iterator[str]:
    for match in _SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if sentence:
            yield sentence


def _kind(sentence: str) -> CandidateKind | None:
    for kind, pattern in _KINDS:
        if pattern.search(sentence):
            return kind
    return None


def _candidate(sentence: str, message: LearnMessage) -> Candidate | None:
    """One sentence as a candidate, or None for small talk and questions."""
    explicit = _EXPLICIT.match(sentence)
    body = sentence[explicit.end() :] if explicit else sentence
    correction = _CORRECTION.match(body)
    if correction:
        body = body[correction.end() :]
    body = _FILLER.sub("", clean_line(body, 1_000)).strip(" ,;:-")
    if not body or body.endswith("?") or _SMALL_TALK.match(body) or _VAGUE_OBJECTS.search(body):
        return None
    if (_PRONOUN_SUBJECT.match(body) or _CHITCHAT.match(body)) and not explicit:
        return None
    if len(content_words(body)) < MIN_CONTENT_WORDS:
        return None
    kind = _kind(body)
    if kind == "preference" and _DEMONSTRATIVE.search(body) and not explicit:
        return None  # "I love this city": which one is lost with the conversation
    if kind in ("event", "plan") and _TASK_CHATTER.search(body) and not explicit:
        return None  # "I got an error in the build": the work's state, not the person's
    corrects = bool(correction) or bool(_CHANGED_MIND.search(body))
    if kind is None and not explicit and not (correction and corrects):
        return None  # a bare "actually, ..." is no correction without a change word
    body = body[0].upper() + body[1:]
    return Candidate(
        kind=kind or "fact",
        content=body,
        who=message.who,
        when=message.when,
        corrects=corrects,
        message_index=message.index,
    )


def extract_candidates(messages: Sequence[LearnMessage]) -> list[Candidate]:
    """The statements worth keeping in ``messages``, in order, without repeats.

    Args:
        messages: the thread's new messages (only ``role="user"`` ones are read).

    Returns:
        One :class:`Candidate` per kept sentence.
    """
    found: list[Candidate] = []
    seen: set[str] = set()
    for message in messages:
        if message.role != "user" or is_no_memory(message.text):
            continue
        for sentence in _sentences(message.text):
            candidate = _candidate(sentence, message)
            key = " ".join(sorted(content_words(candidate.content))) if candidate else ""
            if candidate is not None and key not in seen:
                seen.add(key)
                found.append(candidate)
    return found
