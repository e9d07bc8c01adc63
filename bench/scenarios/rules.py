"""Scenario 7, rules over adversarial text: what one 32,000-character text costs.

Ours is ``records.rules.decide`` on RE2 (every shipped default rule, then known
pathological staff patterns one at a time) over texts built to make a backtracking
engine explode: 32,000 '@' (the old e-mail pattern takes hours on Python's re), 32,000
'0', 32,000 'a' then '!', emoji, random 'a'/'b'. The baseline is the same default rules
on Python's ``re`` (what ran before) over benign text of the same length (support notes
from the corpus), interleaved with ours: on adversarial text RE2 should cost about what
Python's ``re`` costs on normal text, and the defaults at most ``BUDGET_MS`` per text.
Python's ``re`` is not run on the adversarial texts: it would take hours. Checks: every
pattern is compiled by RE2, and on the benign text both engines decide the same.
"""

from __future__ import annotations

import random
import re
import time

import re2

from records import rules as pure_rules

from .. import corpus
from ..harness import Row, median

NAME = "rules"
LENGTH = 32_000
# What the defaults may spend on one text at the content cap: a few per cent of a turn.
BUDGET_MS = 10


def adversarial_texts() -> dict[str, str]:
    rng = random.Random(11)
    return {
        "'@' × 32,000": "@" * LENGTH,
        "'0' × 32,000": "0" * LENGTH,
        "'a' × 31,999 + '!'": "a" * (LENGTH - 1) + "!",
        "'😊' × 32,000": "😊" * LENGTH,
        "random 'a'/'b'": "".join(rng.choice("ab") for _ in range(LENGTH)),
    }


def benign_text() -> str:
    text = " ".join(corpus.texts(2_000, seed=13))
    return text[:LENGTH]


# Staff patterns that backtrack catastrophically on Python's re, each with an input that
# does not match (the worst case for backtracking).
PATHOLOGICAL = (
    (r"(a+)+$", "'a' × 31,999 + '!'", "a" * (LENGTH - 1) + "!"),
    (r"(a|aa)+$", "'a' × 31,999 + '!'", "a" * (LENGTH - 1) + "!"),
    (r"(.*a){20}", "'a' × 19 + '!' × 31,981", "a" * 19 + "!" * (LENGTH - 19)),
    (r"\S+@\S+\.\w+", "'@' × 32,000", "@" * LENGTH),
    (r"(\w+\s?)+$", "'a ' × 15,999 + '!!'", "a " * (LENGTH // 2 - 1) + "!!"),
)
# Linear on RE2 as well, but about the most work per character a short pattern can ask
# for (its matcher cannot cache states): what a staff rule can cost at worst.
COSTLY = (r"a.{600}x", "random 'a'/'b'")


def python_re(pattern: str) -> re.Pattern[str]:
    """The same rule for Python's re: \\x{...} as the character, and Python's \\s already
    covers the Unicode spaces the defaults add with \\p{Z}."""
    pattern = re.sub(r"\\x\{([0-9A-Fa-f]+)\}", lambda m: chr(int(m[1], 16)), pattern)
    return re.compile(pattern.replace(r"\p{Z}", ""), re.IGNORECASE)


def decide_python(text: str, patterns: list[tuple[pure_rules.Rule, re.Pattern[str]]]):
    """``decide`` with Python's re: the baseline (same order, same tie-breaks)."""
    stripped = text.strip()
    short = len(stripped) <= pure_rules.SMALL_TALK_MAX_CHARS
    for rule, compiled in patterns:
        if rule.action == pure_rules.DROP and short and compiled.fullmatch(stripped):
            return (True, None, rule.name)
    matched = [
        r for r, compiled in patterns if r.action == pure_rules.SCORE and compiled.search(stripped)
    ]
    if not matched:
        return (False, None, "")
    best = max(matched, key=lambda r: r.importance)  # the first of equals, as decide()
    return (False, best.importance, best.name)


def interleaved(ours, theirs, repeat: int) -> tuple[list[float], list[float]]:
    """Milliseconds of ``repeat`` calls of each, alternating, after one untimed call each."""
    ours(), theirs()
    a, b = [], []
    for _ in range(repeat):
        for fn, out in ((ours, a), (theirs, b)):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1000)
    return a, b


def run(report, size: dict, env: dict) -> None:
    repeat = size["repeat"]
    defaults = pure_rules.DEFAULT_RULES
    engine = type(re2.compile("x"))
    every = [r.pattern for r in defaults] + [p for p, _, _ in PATHOLOGICAL] + [COSTLY[0]]
    report.check(
        NAME,
        f"all {len(every)} patterns (defaults and pathological) compiled by RE2",
        all(isinstance(pure_rules.compiled(p), engine) for p in every),
    )
    baseline = [(r, python_re(r.pattern)) for r in defaults]
    benign = benign_text()
    ours_benign = pure_rules.decide(benign, defaults)
    report.check(
        NAME,
        "benign 32,000 characters: RE2 and Python's re decide the same",
        (ours_benign.drop, ours_benign.importance, ours_benign.rule)
        == decide_python(benign, baseline),
        f"rule {ours_benign.rule or 'none'}",
    )
    for label, text in [*adversarial_texts().items(), ("benign support notes", benign)]:
        ours, base = interleaved(
            lambda t=text: pure_rules.decide(t, defaults),
            lambda: decide_python(benign, baseline),
            repeat,
        )
        report.rows.append(
            Row(
                f"rules: {len(defaults)} defaults",
                label,
                median(ours),
                max(ours),
                median(base),
                max(base),
                baseline="Python re, same rules, benign text of the same length",
                target=f"≤ {BUDGET_MS} ms",
                met=median(ours) <= BUDGET_MS,
                tail="max",
                note=f"ours {min(ours):.2f}–{max(ours):.2f} ms over {repeat} runs",
            )
        )
    costly = (*COSTLY, adversarial_texts()["random 'a'/'b'"])
    for pattern, label, text in (*PATHOLOGICAL, costly):
        rules = [pure_rules.Rule("staff", pattern, pure_rules.SCORE, 0.5)]
        times = []
        pure_rules.decide(text, rules)
        for _ in range(repeat):
            start = time.perf_counter()
            pure_rules.decide(text, rules)
            times.append((time.perf_counter() - start) * 1000)
        report.rows.append(
            Row(
                "rules: staff pattern",
                f"`{pattern}` on {label}".replace("|", "\\|"),  # a Markdown table cell
                median(times),
                max(times),
                baseline="— (Python re backtracks: not run)" if pattern != COSTLY[0] else "",
                tail="max",
                note=f"{min(times):.2f}–{max(times):.2f} ms over {repeat} runs",
            )
        )
