"""Deterministic importance, pin and drop rules. Pure Python: text in, decision out.

The shipped defaults below apply to every app. Staff add or override rules per app
(``ImportanceRule`` rows, merged in by name); a rule change affects new records only
until a staff action re-scores existing ones.

- A **drop** rule matches when the *whole* text is small talk ("hi", "thanks!",
  "ok, bye"), so "thanks, and I'm allergic to penicillin" is kept.
- A **score** rule matches anywhere in the text. The highest-importance match sets the
  importance and category; any matching rule with ``pin`` pins the record.
- Text no rule matches gets ``UNMATCHED_IMPORTANCE`` (or the classifier's answer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

DROP = "drop"
SCORE = "score"
UNMATCHED_IMPORTANCE = 0.2
UNMATCHED_CATEGORY = "other"


class RuleError(ValueError):
    """A rule is malformed; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    pattern: str
    action: str = SCORE
    importance: float | None = None
    pin: bool = False
    category: str = ""
    enabled: bool = True

    def __post_init__(self) -> None:
        problems = validate_rule(self)
        if problems:
            raise RuleError(f"rule {self.name!r}: " + "; ".join(problems))


def validate_rule(rule: Rule) -> list[str]:
    """Every problem of ``rule``, as sentences; empty when the rule is valid."""
    return [problem for problems in rule_problems(rule).values() for problem in problems]


def rule_problems(rule: Rule) -> dict[str, list[str]]:
    """The problems of ``rule`` by the field they concern (name, action, importance,
    pin, pattern), so a form can show each next to its field."""
    problems: dict[str, list[str]] = {}

    def add(field: str, problem: str) -> None:
        problems.setdefault(field, []).append(problem)

    if not rule.name or not re.fullmatch(r"[\w.:-]{1,64}", rule.name):
        add("name", "name must be 1-64 letters, digits, '_', '.', ':' or '-'")
    if rule.action not in (DROP, SCORE):
        add("action", f"action must be {DROP!r} or {SCORE!r}")
    if rule.action == SCORE and (rule.importance is None or not 0 <= rule.importance <= 1):
        add("importance", "a score rule needs an importance between 0 and 1")
    if rule.action == DROP and rule.pin:
        add("pin", "a drop rule cannot pin")
    if len(rule.pattern) > 2000:
        add("pattern", "pattern is longer than 2000 characters")
    try:
        re.compile(rule.pattern)
    except re.error as exc:
        add("pattern", f"pattern is not a valid regular expression ({exc})")
    return problems


@dataclass(frozen=True, slots=True)
class Decision:
    drop: bool
    importance: float | None  # None: no rule matched (ask the classifier, or default)
    pinned: bool
    rule: str
    category: str


# Punctuation, spaces and emoji around and between small-talk phrases.
_SEP = r"[\s,.!?;:()\-–—~…'\"\U0001F300-\U0001FAFF\u2600-\u27BF\uFE0F]"
SMALL_TALK = (
    r"(?:(?:hi|hello|hey|hiya|howdy|yo|greetings)(?: there| all| again)?|"
    r"good (?:morning|afternoon|evening|night)|"
    r"thanks?(?: you)?(?: (?:so|very) much)?(?: (?:a lot|again))?"
    r"(?: for (?:your|the|all the) help)?|"
    r"thx|ty|cheers|many thanks|much appreciated|appreciate it|"
    r"ok(?:ay)?|k|sure|great|cool|nice|perfect|awesome|got it|sounds good|noted|alright|"
    r"fine|yes|yep|yeah|no|nope|lol|haha|:\)|:-\)|:d|"
    r"bye|goodbye|see (?:you|ya)(?: later| soon)?|talk (?:to you )?(?:later|soon)|"
    r"have a (?:nice|good|great) (?:day|evening|weekend)|you too|take care|"
    r"you'?re welcome|no problem|no worries|my pleasure|glad (?:i|to) (?:could )?help|"
    r"(?:is there )?anything else(?: i can (?:help|do) (?:you )?with)?|"
    r"(?:how )?can i help(?: you)?(?: (?:today|with anything else))?|"
    r"how are you(?: doing)?(?: today)?|i'?m (?:fine|good|well)(?: thanks?)?|"
    r"(?:ok(?:ay)?|noted|great|sure),? thank you)"
)
# Phrases need a separator between them, which keeps matching linear in the text length.
SMALL_TALK_PATTERN = rf"{_SEP}*(?:{SMALL_TALK}(?:{_SEP}+{SMALL_TALK})*)?{_SEP}*"
# Small talk is short; longer text always carries something else.
SMALL_TALK_MAX_CHARS = 200

DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("small-talk", SMALL_TALK_PATTERN, DROP, category="small-talk"),
    Rule(
        "allergy", r"\ballerg(?:y|ic|ies)\b|\banaphyla\w*|\bepipen\b", SCORE, 0.95, True, "health"
    ),
    Rule(
        "medication",
        r"\b(?:medication|medicines?|prescri(?:bed|ption)s?|dosage|insulin|inhaler)\b"
        r"|\b\d+(?:\.\d+)?\s?(?:mg|mcg|ml|units)\b",
        SCORE,
        0.9,
        True,
        "health",
    ),
    Rule(
        "health",
        r"\b(?:diagnos\w*|diabet\w*|asthma|pregnan\w*|blood pressure|epilep\w*|surgery|"
        r"disabilit\w*|disabled|wheelchair|my (?:doctor|gp)|chronic)\b",
        SCORE,
        0.85,
        False,
        "health",
    ),
    Rule(
        "identity",
        r"\b(?:my name is|i am called|my name's|date of birth|born (?:on|in)|"
        r"i'?m \d{1,3} years old|passport|national id|account number|customer number)\b",
        SCORE,
        0.9,
        False,
        "identity",
    ),
    Rule(
        "contact",
        r"\b(?:address|deliver(?:y|ed)? to|ship(?:ping)? to|post ?code|zip ?code|"
        r"phone(?: number)?|mobile|e-?mail|contact me)\b|\S+@\S+\.\w+"
        r"|\+\d[\d\s()-]{7,}\d|\b0\d{2,4}[\s-]?\d{3}[\s-]?\d{3,4}\b",
        SCORE,
        0.8,
        False,
        "contact",
    ),
    Rule(
        "commitment",
        r"\b(?:order(?:ed)?\s*#?\s*\d+|orders?|appointments?|booked|booking|reservations?|"
        r"subscriptions?|renew\w*|refills?|deadline|remind me|due (?:on|by)|"
        r"(?:i|we) (?:will|'ll|promise)|promised|scheduled)\b",
        SCORE,
        0.75,
        False,
        "commitment",
    ),
    Rule(
        "preference",
        r"\b(?:i prefer|prefers?|preferred|favou?rite|i (?:always|never)|i (?:don'?t|do not) "
        r"like|i (?:like|love|hate))\b",
        SCORE,
        0.6,
        False,
        "preference",
    ),
    Rule(
        "complaint",
        r"\b(?:complain\w*|unhappy|disappointed|frustrat\w*|terrible|awful|unacceptable|"
        r"refund\w*|delayed|late again|broken|damaged|never arrived|rude)\b",
        SCORE,
        0.5,
        False,
        "complaint",
    ),
)


def merge_rules(defaults: Iterable[Rule], overrides: Iterable[Rule]) -> tuple[Rule, ...]:
    """Overrides replace defaults of the same name (a disabled override switches one off)."""
    merged = {r.name: r for r in defaults}
    for rule in overrides:
        merged[rule.name] = rule
    return tuple(r for r in merged.values() if r.enabled)


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.UNICODE)


def decide(text: str, rules: Iterable[Rule] = DEFAULT_RULES) -> Decision:
    """Apply ``rules`` to ``text``: drop it, or say how important it is and whether to pin."""
    stripped = text.strip()
    rules = tuple(rules)
    if not stripped:
        return Decision(True, None, False, "empty", "")
    for rule in rules:
        if rule.action != DROP or len(stripped) > SMALL_TALK_MAX_CHARS:
            continue
        if _compiled(rule.pattern).fullmatch(stripped):
            return Decision(True, None, False, rule.name, rule.category)
    best: Rule | None = None
    pinned = False
    for rule in rules:
        if rule.action != SCORE or not _compiled(rule.pattern).search(stripped):
            continue
        pinned = pinned or rule.pin
        if best is None or rule.importance > best.importance:
            best = rule
    if best is None:
        return Decision(False, None, False, "", UNMATCHED_CATEGORY)
    return Decision(False, best.importance, pinned, best.name, best.category)
