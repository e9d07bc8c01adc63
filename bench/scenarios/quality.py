"""Scenario 7, memory quality: can the agent still answer after eviction?

Datasets (``bench.quality``) are replayed through the real services, one replay per
(dataset, mode, policy, budget), fanned out over OS processes (``bench.subproc``
kind "quality"); every replay has its own app, so they share nothing. A question is
answerable when every evidence turn's record is in ``search_memory``'s top 10.
The default policy is compared with the article's policy, four baselines (FIFO, LRU,
LFU, seeded random: only the victim choice differs) and keep-all (the ceiling of
search). Checks: a second run of the same replay gives the same answers, no pinned
record is ever evicted, keep-all evicts nothing, and every user ends within its budget
(or over it on pinned records alone).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import subproc
from ..harness import Row
from ..load import reset_data
from ..quality import data, replay
from ..quality.policies import BASELINES, KEEP_ALL, POLICIES
from ..quality.tables import SYNTHETIC, markdown

NAME = "quality"
LOCOMO = "locomo"
TARGET_MARGIN = 0.03  # the default must beat the best baseline by 3 points up to 200


def dataset_specs(size: dict) -> tuple[list[dict], list[str]]:
    """The datasets to replay, and why any was skipped."""
    specs, notes = [], []
    path = size.get("locomo")
    if path and Path(path).is_file():
        specs.append(
            {
                "name": LOCOMO,
                "path": str(Path(path).resolve()),
                "seed": replay.SEED,
                "conversations": size.get("locomo_conversations"),
            }
        )
    else:
        notes.append(
            f"LoCoMo skipped: no file at {path} (pass --locomo PATH to a LoCoMo-format "
            "JSON file, e.g. the public half in ../shared/data/locomo/)"
        )
    if size.get("synthetic_users"):
        specs.append(
            {
                "name": SYNTHETIC,
                "users": size["synthetic_users"],
                "sessions": size["synthetic_sessions"],
                "seed": replay.SEED,
            }
        )
    return specs, notes


def jobs_for(datasets: dict[str, data.Dataset], size: dict) -> list[replay.Job]:
    policies = [p for p in size.get("policies") or POLICIES if p != KEEP_ALL]
    jobs = []
    for name, dataset in datasets.items():
        for mode in dataset.modes:
            jobs.append(replay.Job(name, mode, KEEP_ALL, None))
            for budget in size["budgets"]:
                jobs.extend(replay.Job(name, mode, p, budget) for p in policies)
            # The determinism check: the default policy again, at the tightest budget.
            jobs.append(replay.Job(name, mode, policies[0], min(size["budgets"]), run=2))
    return jobs


def _partition(jobs: list[replay.Job], datasets, processes: int) -> list[list[replay.Job]]:
    """Longest first onto the least loaded process (cost ~ turns + questions)."""

    def cost(job):
        d = datasets[job.dataset]
        return d.turns + 2 * d.questions + (d.turns if job.budget is None else 0)

    loads = [[0, []] for _ in range(max(1, processes))]
    for job in sorted(jobs, key=cost, reverse=True):
        target = min(loads, key=lambda pair: pair[0])
        target[0] += cost(job)
        target[1].append(job)
    return [js for _, js in loads if js]


def run(report, size: dict, env: dict) -> None:
    reset_data()
    specs, notes = dataset_specs(size)
    for note in notes:
        print(f"bench: quality: {note}", file=sys.stderr, flush=True)
    datasets = {spec["name"]: replay.load_dataset(spec) for spec in specs}
    if not datasets:
        report.tables.append("Memory quality: nothing to replay. " + " ".join(notes))
        return
    processes = size.get("processes", 2)
    # Sessions go through the session service once, shared out by user over processes.
    users = [[name, u.user_id] for name, d in datasets.items() for u in d.users]
    stores = [
        subproc.start("quality_store", {"datasets": specs, "users": users[p::processes]})
        for p in range(processes)
    ]
    for proc in stores:
        subproc.result(proc)
    jobs = jobs_for(datasets, size)
    procs = [
        subproc.start("quality", {"datasets": specs, "jobs": [j.__dict__ for j in part]})
        for part in _partition(jobs, datasets, processes)
    ]
    outcomes = [o for p in procs for o in subproc.result(p)["outcomes"]]
    summarise(report, size, datasets, outcomes, notes)


# --- results -----------------------------------------------------------------------


def _frac(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def quality_row(o: dict) -> dict:
    job = o["job"]
    row = {
        "scenario": NAME,
        "dataset": job["dataset"],
        "mode": job["mode"],
        "budget": job["budget"],
        "policy": job["policy"],
        "questions": o["questions"],
        "answerable": _frac(o["answerable"], o["questions"]),
        "retained": _frac(o["evidence_retained"], o["evidence"]),
    }
    if job["dataset"] == SYNTHETIC:
        row["pinned_answerable"] = _frac(o["pinned_answerable"], o["pinned_questions"])
        row["high_answerable"] = _frac(o["high_answerable"], o["high_questions"])
        row["stale"] = _frac(o["stale"], o["updated_questions"])
    return row


def _key(job: dict) -> tuple:
    return (job["dataset"], job["mode"], job["policy"], job["budget"])


def summarise(report, size, datasets, outcomes: list[dict], notes: list[str]) -> None:
    first = {_key(o["job"]): o for o in outcomes if o["job"]["run"] == 1}
    for o in outcomes:
        if o["job"]["run"] == 2:
            other = first[_key(o["job"])]
            job = o["job"]
            report.check(
                NAME,
                f"{job['dataset']} {job['mode']}: two runs of {job['policy']} at "
                f"{job['budget']} give the same top 10 for all {len(o['answers'])} questions",
                o["answers"] == other["answers"] and o["answers"],
            )
    pinned_lost = sum(o["pinned_evicted"] for o in outcomes)
    report.check(NAME, "no pinned record evicted in any replay", pinned_lost == 0, f"{pinned_lost}")
    kept = [o for o in outcomes if o["job"]["policy"] == KEEP_ALL]
    report.check(NAME, "keep-all evicts nothing", kept and all(o["evictions"] == 0 for o in kept))
    over = [
        f"{o['job']['policy']}@{o['job']['budget']}"
        for o in outcomes
        if o["job"]["budget"] is not None
        and any(
            n > max(o["job"]["budget"], pins)
            for n, pins in zip(o["records_per_user"], o["pins_per_user"], strict=True)
        )
    ]
    report.check(
        NAME,
        "every user ends within the budget (or over it on pinned records alone)",
        not over,
        ", ".join(sorted(set(over))[:5]),
    )
    rows = [quality_row(o) for o in first.values()]
    rows.sort(key=_row_order)
    report.extra_rows.extend(rows)
    report.details[NAME] = [
        {k: v for k, v in o.items() if k != "answers"} for o in outcomes if o["job"]["run"] == 1
    ]
    _target_rows(report, rows, size)
    report.tables.append(tables(rows, first, datasets, notes))


def _row_order(row: dict) -> tuple:
    policies = [*POLICIES, KEEP_ALL]
    return (
        row["dataset"],
        row["mode"],
        row["budget"] is None,
        row["budget"] or 0,
        policies.index(row["policy"]) if row["policy"] in policies else len(policies),
    )


def _target_rows(report, rows: list[dict], size: dict) -> None:
    """The issue's targets, default vs the best baseline, in the main table."""
    by = {(r["dataset"], r["mode"], r["budget"], r["policy"]): r for r in rows}
    for dataset, mode, budget in sorted(
        {(r["dataset"], r["mode"], r["budget"]) for r in rows if r["budget"]}
    ):
        ours = by.get((dataset, mode, budget, "default"))
        bases = [
            by[(dataset, mode, budget, b)] for b in BASELINES if (dataset, mode, budget, b) in by
        ]
        if not ours or not bases or ours["answerable"] is None:
            continue
        best = max(bases, key=lambda r: r["answerable"] or 0)
        targeted = (dataset == SYNTHETIC or mode == "interleaved") and budget in (50, 100, 200, 400)
        margin = TARGET_MARGIN if budget <= 200 else 0.0
        report.rows.append(
            Row(
                f"quality: {dataset} {mode}",
                f"{budget} records/user",
                100 * ours["answerable"],
                base=100 * (best["answerable"] or 0),
                unit="%",
                higher_is_better=True,
                baseline=f"best baseline ({best['policy'].upper()}), answerable@10",
                target=(f"≥ best + {100 * margin:.0f} pts" if margin else "≥ best")
                if targeted
                else "",
                met=(ours["answerable"] >= (best["answerable"] or 0) + margin - 1e-9)
                if targeted
                else None,
            )
        )
        if dataset == SYNTHETIC and budget == 200:
            for key, label, goal, higher in (
                ("pinned_answerable", "pinned-fact answerable", 0.95, True),
                ("high_answerable", "high-importance answerable", 0.90, True),
                ("stale", "stale answers (updated facts)", 0.05, False),
            ):
                value = ours.get(key)
                if value is None:
                    continue
                report.rows.append(
                    Row(
                        f"quality: synthetic {label}",
                        "200 records/user",
                        100 * value,
                        base=100 * (best.get(key) or 0),
                        unit="%",
                        higher_is_better=higher,
                        baseline=f"best baseline ({best['policy'].upper()})",
                        target=f"{'≥' if higher else '≤'} {100 * goal:.0f} %",
                        met=value >= goal if higher else value <= goal,
                    )
                )


def tables(rows: list[dict], outcomes: dict, datasets: dict, notes: list[str]) -> str:
    """The quality section of the console output, as Markdown."""
    footer = [
        f"{name}: {len(d.users)} users, {d.turns:,} turns, {d.questions:,} questions"
        + (f" ({'; '.join(d.notes)})" if d.notes else "")
        for name, d in datasets.items()
    ]
    return markdown(rows, list(outcomes.values()), footer + notes)
