"""Scenario: known-answer recall@10, ours against ADK's memory services, with latency.

One user per size holds that many records of ``bench.corpus`` filler (bulk-loaded as the
search scenario's are) plus the facts of ``bench.known_answers``, planted through
``add_memories`` (the real write path) at ages spread like the filler's, so the
answers are neither the newest nor the oldest records. ADK's ``SqliteMemoryService``
and ``InMemoryMemoryService`` hold the same texts in the same order (the search
scenario's loading). Each question is asked once per service, the questions shared
out over interleaved repetitions (the order of the services rotating), and a
question counts as recalled when its planted record is in the service's top 10.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from datetime import timedelta
from pathlib import Path

from asgiref.sync import sync_to_async
from django.utils import timezone
from google.adk.memory._sqlite_memory_service import SqliteMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records import memory_service
from records.models import MemoryRecord
from records.policies import update_policy

from .. import known_answers
from ..harness import Row, alternate_async
from ..load import UserSpec, load_records, reset_data, vacuum_analyze
from .search import adk_baselines, timed_searches

APP = "bench-recall"
NAME = "recall"
TOP = 10
TARGET = 95.0  # % of questions, at every size (issue 16)
MAX_AGE_DAYS = 330  # the filler's ages (bench.load), inside the default 365-day TTL
FILLER_SEED = 11  # bench.corpus texts, as the search scenario loads them


def plant(user_id: str, now, seed: int = 16) -> dict[str, int]:
    """Store every known answer for ``user_id``, each at its own age; {answer: record id}."""
    rng = random.Random(seed)
    for fact in known_answers.SET:
        at = now - timedelta(days=rng.uniform(0, MAX_AGE_DAYS))
        entry = MemoryEntry(
            content=types.Content(role="user", parts=[types.Part(text=fact.answer)]),
            author="user",
            timestamp=at.isoformat(),
        )
        memory_service.add_memories(APP, user_id, [entry], at)
    answers = [f.answer for f in known_answers.SET]
    return dict(
        MemoryRecord.objects.filter(app_name=APP, user_id=user_id, content__in=answers).values_list(
            "content", "id"
        )
    )


def user_texts(user_id: str) -> list[str]:
    """The user's record texts in the order they were written (for ADK's services)."""
    return list(
        MemoryRecord.objects.filter(app_name=APP, user_id=user_id)
        .order_by("entry_timestamp", "created_at", "id")
        .values_list("content", flat=True)
    )


def recalled(memories, answer: str, answer_id: int | None = None) -> bool:
    """Whether the answer is among the first ``TOP`` memories (by record id for ours,
    by text for ADK's services, which have no ids of ours)."""
    for m in memories[:TOP]:
        if answer_id is not None and m.id == str(answer_id):
            return True
        text = " ".join(p.text for p in (m.content.parts or []) if p.text) if m.content else ""
        if answer_id is None and text == answer:
            return True
    return False


def run(report, size: dict, env: dict) -> None:
    reset_data()
    now = timezone.now()
    update_policy(APP, {"max_records": 100_000, "max_tokens": 10_000_000})
    sizes = size["records"]
    load_records(APP, [UserSpec(f"recall-{n}", n) for n in sizes], now, seed=FILLER_SEED)
    planted = {}
    for n in sizes:
        planted[n] = plant(f"recall-{n}", now)
        texts = user_texts(f"recall-{n}")
        stored_once = all(texts.count(f.answer) == 1 for f in known_answers.SET)
        report.check(
            NAME,
            f"{n:,} records: each of the {len(known_answers.SET)} questions' answers is "
            "planted once",
            len(planted[n]) == len(known_answers.SET) and stored_once,
            f"{len(planted[n])} planted",
        )
    vacuum_analyze()
    asyncio.run(_run(report, size, sizes, planted))


async def _run(report, size: dict, sizes: list[int], planted: dict[int, dict[str, int]]) -> None:
    ours = memory_service.EvictingMemoryService()
    questions = [f.question for f in known_answers.SET]
    answers = {f.question: f.answer for f in known_answers.SET}
    reps = size["repetitions"]
    details = []
    misses_lines = []
    with tempfile.TemporaryDirectory(prefix="bench-recall-sqlite-") as tmp:
        sqlite = SqliteMemoryService(Path(tmp) / "memory.db", max_results=TOP)
        for n in sizes:
            user_id = f"recall-{n}"
            texts = await sync_to_async(user_texts)(user_id)
            in_memory = await adk_baselines(sqlite, user_id, texts, APP)
            ids = planted[n]
            contenders = {"ours": ours, "sqlite": sqlite, "in-memory": in_memory}
            hits: dict[str, dict[str, bool]] = {k: {} for k in contenders}

            def contender(label, service, user_id=user_id, ids=ids, hits=hits):
                async def one(rep):
                    asked = questions[rep::reps]
                    times, memories = await timed_searches(service, user_id, asked, APP)
                    for q, found in zip(asked, memories, strict=True):
                        answer = answers[q]
                        hits[label][q] = recalled(
                            found, answer, ids.get(answer) if label == "ours" else None
                        )
                    return times

                return one

            timed = await alternate_async({k: contender(k, v) for k, v in contenders.items()}, reps)
            pct = {k: 100.0 * sum(h.values()) / len(questions) for k, h in hits.items()}
            label = f"{n:,} records/user"
            report.check(
                NAME,
                f"{n:,} records: every question asked once per service",
                all(len(h) == len(questions) for h in hits.values()),
            )
            for base, name in (
                ("sqlite", "ADK SqliteMemoryService"),
                ("in-memory", "ADK InMemoryMemoryService"),
            ):
                report.rows.append(
                    Row(
                        "recall: known-answer recall@10",
                        label,
                        pct["ours"],
                        base=pct[base],
                        unit="%",
                        baseline=name,
                        higher_is_better=True,
                        target=f"≥ {TARGET:g} %" + (", ≥ baseline" if base == "sqlite" else ""),
                        met=pct["ours"] >= TARGET
                        and (base != "sqlite" or pct["ours"] >= pct[base]),
                    )
                )
                report.rows.append(
                    Row.interleaved(
                        "recall: search latency",
                        label,
                        timed["ours"],
                        timed[base],
                        baseline=name,
                    )
                )
            missed = {k: [q for q in questions if not h[q]] for k, h in hits.items()}
            details.append({"records": n, "recall_at_10": pct, "missed": missed})
            for k, qs in missed.items():
                misses_lines.append(
                    f"- {label}, {k} ({len(qs)}): " + ("; ".join(f'"{q}"' for q in qs) or "none")
                )
        await sqlite.close()
    report.details[NAME] = details
    report.tables.append(
        f"Known-answer questions missed in the top {TOP} ({len(questions)} asked per size "
        "and service):\n" + "\n".join(misses_lines)
    )
