"""LoCoMo-format files: each conversation is one user, each session one ADK session.

Format (snap-research/LoCoMo ``data/locomo10.json``): a list of conversations, each with
``sample_id``, ``conversation`` (``speaker_a``, ``speaker_b``, ``session_N`` lists of
turns with ``speaker``, ``dia_id``, ``text`` and sometimes ``blip_caption``, and
``session_N_date_time`` like "1:56 pm on 8 May, 2023") and ``qa`` (``question``,
``evidence`` as dia_ids, ``category``). Category 5 (adversarial: the answer is not in
the dialogue) is skipped. Evidence ids are read leniently ("D8:6; D9:17", "D:11:26");
ids that name no turn of the conversation are ignored, and a question left with no
evidence is skipped; both are counted in the dataset's notes.

Modes: "end" asks every question after the last session; "interleaved" asks each
before a session drawn (seeded, per question) from those after its last evidence, or
at the end.
"""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .data import END, Dataset, Question, Session, Turn, User

MODES = ("end", "interleaved")
SKIPPED_CATEGORY = 5
_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


class LocomoError(ValueError):
    """The file is not in LoCoMo's format; the message says where and what was expected."""


def parse_when(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023", as UTC (the data has no time zone)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise LocomoError(f"session date {text!r} is not like '1:56 pm on 8 May, 2023'") from exc


def turn_text(turn: dict) -> str:
    """The turn as the agent saw it: its text, and what a shared photo showed."""
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares {caption}]".strip()
    return text


def evidence_ids(raw) -> list[str]:
    ids = []
    for item in raw or []:
        for m in _DIA_ID.finditer(str(item)):
            ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(ids))


def turn_key(dia_id) -> str:
    """A turn's ``dia_id`` in the form evidence ids are read in ("D3:07" and "D:3:7" are
    "D3:7"), so the two always meet; an id of another shape is kept as it is."""
    text = str(dia_id).strip()
    m = _DIA_ID.fullmatch(text)
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else text


def load(path: str | Path, *, seed: int = 7, conversations: int | None = None) -> Dataset:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LocomoError(f"{path} is not JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise LocomoError(f"{path}: expected a list of conversations")
    dataset = Dataset(name="locomo", modes=MODES)
    unknown_ids = no_evidence = 0
    for n, item in enumerate(raw[:conversations] if conversations else raw):
        try:
            user, unknown, empty = _conversation(item, n, seed)
        except (KeyError, TypeError, AttributeError) as exc:
            raise LocomoError(f"{path}: conversation {n} lacks {exc}") from exc
        dataset.users.append(user)
        unknown_ids += unknown
        no_evidence += empty
    if unknown_ids:
        dataset.notes.append(f"{unknown_ids} evidence ids name no turn and were ignored")
    if no_evidence:
        dataset.notes.append(f"{no_evidence} questions without usable evidence were skipped")
    return dataset


def _conversation(item: dict, n: int, seed: int) -> tuple[User, int, int]:
    user_id = str(item.get("sample_id") or f"conversation-{n}")
    conv = item["conversation"]
    numbers = sorted(
        int(m.group(1))
        for key, value in conv.items()
        if (m := _SESSION.fullmatch(key)) and isinstance(value, list) and value
    )
    sessions = []
    session_of: dict[str, int] = {}
    previous_end = None
    for index, number in enumerate(numbers):
        at = parse_when(conv[f"session_{number}_date_time"])
        if previous_end is not None and at <= previous_end:
            at = previous_end + timedelta(minutes=1)  # time never runs backwards
        turns = []
        for turn in conv[f"session_{number}"]:
            key = turn_key(turn["dia_id"])
            text = turn_text(turn)
            if not text or key in session_of:
                continue
            session_of[key] = index
            turns.append(Turn(key=key, author=str(turn.get("speaker") or "user"), text=text))
        sessions.append(Session(id=f"{user_id}-s{number}", at=at, turns=tuple(turns)))
        previous_end = at + timedelta(minutes=len(turns) + 1)
    questions = []
    unknown = empty = 0
    for qi, qa in enumerate(item["qa"]):
        if str(qa.get("category")) == str(SKIPPED_CATEGORY):
            continue
        ids = evidence_ids(qa.get("evidence"))
        known = [e for e in ids if e in session_of]
        unknown += len(ids) - len(known)
        if not known:
            empty += 1
            continue
        last = max(session_of[e] for e in known)
        later = [*range(last + 1, len(sessions)), END]
        rng = random.Random(f"{seed}:{user_id}:{qi}")
        questions.append(
            Question(
                id=f"{user_id}-q{qi}",
                text=str(qa["question"]),
                evidence=tuple(known),
                ask={"end": END, "interleaved": rng.choice(later)},
                category=str(qa.get("category", "")),
            )
        )
    return User(user_id, tuple(sessions), tuple(questions)), unknown, empty
