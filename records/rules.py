"""Deterministic importance, pin and drop rules. Pure Python: text in, decision out.

The shipped defaults below apply to every app. Staff add or override rules per app
(``ImportanceRule`` rows, merged in by name); a rule change affects new records only
until a staff action re-scores existing ones.

- A **drop** rule matches when the *whole* text is small talk ("hi", "thanks!",
  "ok, bye"), so "thanks, and I'm allergic to penicillin" is kept.
- A **score** rule matches anywhere in the text. The highest-importance match sets the
  importance and category; any matching rule with ``pin`` pins the record.
- Text no rule matches gets ``UNMATCHED_IMPORTANCE`` (or the classifier's answer).

Every pattern, shipped or staff-written, runs on RE2 (``google-re2``): it never
backtracks, so matching takes time linear in the text whatever the pattern. What RE2
cannot run (backreferences, lookaround, possessive quantifiers) is refused when a rule
is made, with what to write instead. ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII in
RE2; ``\\pL`` is any letter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import re2

from . import re2_match
from .storable import storable_text

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


def _valid_name(name: str) -> bool:
    """1-64 letters, digits (any script), ``_``, ``.``, ``:`` or ``-``: as ``[\\w.:-]``."""
    return bool(name) and len(name) <= 64 and all(c.isalnum() or c in "_.:-" for c in name)


def validate_rule(rule: Rule) -> list[str]:
    """Every problem of ``rule``, as sentences; empty when the rule is valid."""
    return [problem for problems in rule_problems(rule).values() for problem in problems]


def rule_problems(rule: Rule) -> dict[str, list[str]]:
    """The problems of ``rule`` by the field they concern (name, action, importance,
    pin, pattern), so a form can show each next to its field."""
    problems: dict[str, list[str]] = {}

    def add(field: str, problem: str) -> None:
        problems.setdefault(field, []).append(problem)

    if not _valid_name(rule.name):
        add("name", "name must be 1-64 letters, digits, '_', '.', ':' or '-'")
    if rule.action not in (DROP, SCORE):
        add("action", f"action must be {DROP!r} or {SCORE!r}")
    if rule.action == SCORE and (rule.importance is None or not 0 <= rule.importance <= 1):
        add("importance", "a score rule needs an importance between 0 and 1")
    if rule.action == DROP and rule.pin:
        add("pin", "a drop rule cannot pin")
    if len(rule.pattern) > MAX_PATTERN_CHARS:
        add("pattern", f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    else:
        problem = pattern_problem(rule.pattern)
        if problem:
            add("pattern", problem)
    return problems


# --- the engine ---------------------------------------------------------------------------

MAX_PATTERN_CHARS = 2000
# RE2's own default, stated: the most memory one compiled rule may use (its program and
# its match cache). A pattern that needs more is refused as too large.
ENGINE_MAX_MEMORY = 8 << 20


def _engine_options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False
    options.never_capture = True  # rules only ask "does it match?": no groups to track
    options.log_errors = False  # a refused pattern is reported to the person, not stderr
    options.max_mem = ENGINE_MAX_MEMORY
    return options


_OPTIONS = _engine_options()


@lru_cache(maxsize=512)
def compiled(pattern: str):
    """``pattern`` compiled by RE2, case-insensitive. Raises ``re2.error`` (or
    UnicodeEncodeError for lone surrogates) when RE2 cannot run it."""
    return re2.compile(pattern, _OPTIONS)


def pattern_problem(pattern: str) -> str | None:
    """Why RE2 cannot run ``pattern``, and what to write instead; None when it can."""
    try:
        compiled(pattern)
    except UnicodeEncodeError:
        return "pattern contains invalid characters (lone UTF-16 surrogates)"
    except re2.error as exc:
        message = exc.args[0] if exc.args else ""
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        return _explain(str(message))
    return None


_LINEAR = "the rule engine (RE2) never backtracks, so every rule runs in time linear in the text"


def _explain(error: str) -> str:
    """A person's version of an RE2 compile error: what is unsupported and the way round."""
    kind, _, part = error.partition(": ")
    if kind == "invalid escape sequence" and part[1:2].isdigit():
        return (
            f"backreferences such as {part} are not supported: {_LINEAR}. Match the "
            "repeated text itself, or split the rule in two"
        )
    if kind == "invalid escape sequence" and part == "\\Z":
        return "\\Z is written \\z in the rule engine (RE2): the end of the text"
    if kind == "invalid escape sequence" and part[1:2] in ("u", "U", "N"):
        return (
            f"{part}… escapes are not supported: write a character by its code point as "
            "\\x{00E9}, or type the character itself"
        )
    if kind == "invalid perl operator" and part in ("(?=", "(?!", "(?<=", "(?<!"):
        return (
            f"lookahead and lookbehind ({part}…) are not supported: {_LINEAR}. Match the "
            "surrounding text as part of the pattern (a score rule only has to find it "
            "somewhere), or use \\b for the edge of a word"
        )
    if kind == "invalid perl operator" and part == "(?P":
        return (
            f"(?P=name) backreferences are not supported: {_LINEAR}. Match the repeated "
            "text itself; to name a group, write (?P<name>…)"
        )
    if kind == "invalid perl operator" and part == "(?>":
        return f"atomic groups (?>…) are not needed: {_LINEAR}. Write a plain group (?:…)"
    if kind == "bad repetition operator" and part.endswith("+") and len(part) == 2:
        return (
            f"possessive quantifiers such as {part} are not needed: {_LINEAR}. Write "
            f"{part[0]} instead"
        )
    if kind == "invalid perl operator" and part == "(?#":
        return "comments (?#…) are not supported: remove them"
    if kind == "invalid perl operator" and part == "(?(":
        return "conditional groups (?(…)…) are not supported: use two rules"
    if kind == "invalid perl operator":
        return (
            f"{part}… is not supported: the inline flags are i, m, s and U, e.g. (?s) or "
            "(?i:…); verbose mode (?x) is not available"
        )
    if kind == "invalid repetition size":
        return (
            f"the repetition {part} is too large: a count can be at most 1000, and counts "
            "of nested repetitions multiply"
        )
    if error.startswith("pattern too large"):
        return (
            "pattern is too large once compiled: large repetition counts, e.g. \\w{500} "
            "or \\pL{100}, multiply its size. Use smaller counts, or + and *"
        )
    return f"pattern is not a valid regular expression for the rule engine (RE2): {error}"


@dataclass(frozen=True, slots=True)
class Decision:
    drop: bool
    importance: float | None  # None: no rule matched (ask the classifier, or default)
    pinned: bool
    rule: str
    category: str


# Any space: RE2's \s is ASCII, Python's was Unicode (no-break, ideographic, thin spaces).
_SPACE = r"\s\p{Z}"
# Punctuation, spaces and emoji around and between small-talk phrases.
_SEP = rf"[{_SPACE},.!?;:()\-–—~…'\"\x{{1F300}}-\x{{1FAFF}}\x{{2600}}-\x{{27BF}}\x{{FE0F}}]"
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
    # Pins are for what the user states about themselves, so that they fit the caps: an
    # allergy, and their own medication with its dose. A passing mention (a refill, an
    # inhaler on order, "added to your allergy list") scores without pinning.
    Rule(
        "allergy",
        r"\ballergic\b|\ballerg(?:y|ies) to\b|\banaphyla\w*|\bepipen\b",
        SCORE,
        0.95,
        True,
        "health",
    ),
    Rule(
        "medication",
        r"\bmy (?:regular |daily |usual |current |new )?(?:medications?|medicines?|dose|dosage)"
        r" (?:is|are|was|has)\b"
        r"|\bi (?:take|use|am on|'m on|am taking|'m taking)\b[^.!?\n]{0,40}"
        rf"\b\d+(?:\.\d+)?[{_SPACE}]?(?:mg|mcg|ml|units)\b"
        rf"|\b\d+(?:\.\d+)?[{_SPACE}]?(?:mg|mcg|ml|units)\b,?"
        r" (?:every|each|once|twice|daily|a day)\b",
        SCORE,
        0.9,
        True,
        "health",
    ),
    Rule(
        "health-mention",
        r"\b(?:allerg\w*|medications?|medicines?|prescri(?:bed|ptions?)|dosage|insulin|inhaler)\b"
        rf"|\b\d+(?:\.\d+)?[{_SPACE}]?(?:mg|mcg|ml|units)\b",
        SCORE,
        0.6,
        False,
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
        # An e-mail address: \S@\S+\.\w finds exactly the texts \S+@\S+\.\w+ would.
        r"\b(?:address|deliver(?:y|ed)? to|ship(?:ping)? to|post ?code|zip ?code|"
        r"phone(?: number)?|mobile|e-?mail|contact me)\b|\S@\S+\.\w"
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


def decide(text: str, rules: Iterable[Rule] = DEFAULT_RULES) -> Decision:
    """Apply ``rules`` to ``text``: drop it, or say how important it is and whether to pin."""
    stripped = text.strip()
    rules = tuple(rules)
    if not stripped:
        return Decision(True, None, False, "empty", "")
    # RE2 matches UTF-8: encode once for every rule (lone surrogates become U+FFFD, as
    # they are stored).
    encoded = storable_text(stripped).encode("utf-8")
    for rule in rules:
        if rule.action != DROP or len(stripped) > SMALL_TALK_MAX_CHARS:
            continue
        if re2_match.matches(compiled(rule.pattern), encoded, whole=True):
            return Decision(True, None, False, rule.name, rule.category)
    best: Rule | None = None
    pinned = False
    for rule in rules:
        if rule.action != SCORE or not re2_match.matches(compiled(rule.pattern), encoded):
            continue
        pinned = pinned or rule.pin
        if best is None or rule.importance > best.importance:
            best = rule
    if best is None:
        return Decision(False, None, False, "", UNMATCHED_CATEGORY)
    return Decision(False, best.importance, pinned, best.name, best.category)
