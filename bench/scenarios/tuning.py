"""The tuner's target on the synthetic year: weights tuned on months 1-6 against the
policy that ran, judged by answerable@10 on the questions of months 7-12.

For each starting policy and budget: the synthetic year's first half is replayed through
the real services under the starting policy (``bench.quality.replay``, ``until_day``),
which logs the access history as production does; ``backtest.tune`` then searches its
space on that history at the half year's end, exactly as ``manage.py tune --days 180``
would. The whole year is then replayed twice, under the starting policy and under it
with the best candidate's values, and answerable@10 is counted on the questions asked
from day 180 on (``late_day``).

Two starting policies (``starts``): the article's, the product's default when the
tuner's issue was filed and a policy the tuner has seen nothing of; and today's default,
which was itself chosen on this whole benchmark year (months 7-12 included), so the
tuner, shown only months 1-6, can hardly beat it. Both are reported as measured.
"""

from __future__ import annotations

import json

from .. import subproc
from ..harness import Row
from ..load import reset_data
from ..quality import replay
from ..quality.policies import ARTICLE, DEFAULT, TUNED
from ..quality.tables import SYNTHETIC

NAME = "tuning"
HALF_YEAR = 180
MODE = "year"
TARGET_POINTS = 3.0


def run(report, size: dict, env: dict) -> None:
    reset_data()
    spec = {
        "name": SYNTHETIC,
        "users": size["synthetic_users"],
        "sessions": size["synthetic_sessions"],
        "seed": replay.SEED,
    }
    dataset = replay.load_dataset(spec)
    users = [[SYNTHETIC, u.user_id] for u in dataset.users]
    processes = size.get("processes", 2)
    for proc in [
        subproc.start("quality_store", {"datasets": [spec], "users": users[p::processes]})
        for p in range(processes)
    ]:
        subproc.result(proc)
    starts = size.get("starts", [ARTICLE, DEFAULT])
    cases = [(start, budget) for start in starts for budget in size["budgets"]]
    tunes = {
        (start, budget): subproc.start(
            "quality_tune",
            {
                "dataset": spec,
                "job": replay.Job(SYNTHETIC, MODE, start, budget, until_day=HALF_YEAR).__dict__,
            },
        )
        for start, budget in cases
    }
    tuned = {case: subproc.result(proc) for case, proc in tunes.items()}
    jobs = []
    for start, budget in cases:
        jobs.append(replay.Job(SYNTHETIC, MODE, start, budget, late_day=HALF_YEAR))
        jobs.append(
            replay.Job(
                SYNTHETIC,
                MODE,
                TUNED,
                budget,
                values=tuned[start, budget]["values"],
                start=start,
                late_day=HALF_YEAR,
            )
        )
    procs = [
        subproc.start(
            "quality", {"datasets": [spec], "jobs": [j.__dict__ for j in jobs[p::processes]]}
        )
        for p in range(processes)
    ]
    outcomes = {}
    for proc in procs:
        for o in subproc.result(proc)["outcomes"]:
            job = o["job"]
            start = job["start"] if job["policy"] == TUNED else job["policy"]
            outcomes[(start, job["policy"] == TUNED, job["budget"])] = o
    data = f"synthetic year, {len(dataset.users)} users, {size['synthetic_sessions']} sessions each"
    for start_policy, budget in cases:
        start, end = outcomes[(start_policy, False, budget)], outcomes[(start_policy, True, budget)]
        report.check(
            NAME,
            f"from {start_policy}, budget {budget}: questions asked in months 7-12",
            start["late_questions"] > 0 and start["late_questions"] == end["late_questions"],
            f"{start['late_questions']} and {end['late_questions']}",
        )
        before = 100 * start["late_answerable"] / max(1, start["late_questions"])
        after = 100 * end["late_answerable"] / max(1, end["late_questions"])
        t = tuned[start_policy, budget]
        report.rows.append(
            Row(
                f"tuning from {start_policy}: answerable@10, months 7-12, "
                f"{budget} records per user",
                f"{data}; tuned on months 1-6 ({t['tried']} candidates)",
                round(after, 1),
                unit="%",
                base=round(before, 1),
                baseline=f"the starting policy ({start_policy})",
                target=f"≥ +{TARGET_POINTS:g} points",
                met=after - before >= TARGET_POINTS,
                higher_is_better=True,
                note=(
                    f"{after - before:+.1f} points; chosen: {t['label']} "
                    f"{json.loads(t['values']) or ''}; regret in months 1-6 "
                    f"{t['current_regret']} → {t['best_regret']}; first-ranked "
                    f"{t['first']}, held out from {(t['held_out_from'] or '-')[:10]}: "
                    f"searches only the policy that ran / only it regrets "
                    f"{'/'.join(map(str, t['held_out'] or []))}"
                ),
            )
        )
