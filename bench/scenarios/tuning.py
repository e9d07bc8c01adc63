"""The tuner's target on the synthetic year: weights tuned on months 1-6 against the
policy that ran, judged by answerable@10 on the questions of months 7-12.

For each budget: the synthetic year's first half is replayed through the real services
under the default policy (``bench.quality.replay``, ``until_day``), which logs the
access history as production does; ``backtest.tune`` then searches its space on that
history at the half year's end, exactly as ``manage.py tune --days 180`` would. The
whole year is then replayed twice, under the default policy and under the default with
the best candidate's values, and answerable@10 is counted on the questions asked from
day 180 on (``late_day``). The default policy was itself chosen on this benchmark, so
the gain may be small or none: the figure is reported as measured.
"""

from __future__ import annotations

import json

from .. import subproc
from ..harness import Row
from ..load import reset_data
from ..quality import replay
from ..quality.policies import DEFAULT, TUNED
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
    tunes = {
        budget: subproc.start(
            "quality_tune",
            {
                "dataset": spec,
                "job": replay.Job(SYNTHETIC, MODE, DEFAULT, budget, until_day=HALF_YEAR).__dict__,
            },
        )
        for budget in size["budgets"]
    }
    tuned = {budget: subproc.result(proc) for budget, proc in tunes.items()}
    jobs = []
    for budget in size["budgets"]:
        jobs.append(replay.Job(SYNTHETIC, MODE, DEFAULT, budget, late_day=HALF_YEAR))
        jobs.append(
            replay.Job(
                SYNTHETIC,
                MODE,
                TUNED,
                budget,
                values=tuned[budget]["values"],
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
            outcomes[(o["job"]["policy"], o["job"]["budget"])] = o
    data = f"synthetic year, {len(dataset.users)} users, {size['synthetic_sessions']} sessions each"
    for budget in size["budgets"]:
        start, end = outcomes[(DEFAULT, budget)], outcomes[(TUNED, budget)]
        report.check(
            NAME,
            f"budget {budget}: questions asked in months 7-12",
            start["late_questions"] > 0 and start["late_questions"] == end["late_questions"],
            f"{start['late_questions']} and {end['late_questions']}",
        )
        before = 100 * start["late_answerable"] / max(1, start["late_questions"])
        after = 100 * end["late_answerable"] / max(1, end["late_questions"])
        t = tuned[budget]
        report.rows.append(
            Row(
                f"tuning: answerable@10, months 7-12, {budget} records per user",
                f"{data}; tuned on months 1-6 ({t['tried']} candidates)",
                round(after, 1),
                unit="%",
                base=round(before, 1),
                baseline="the starting policy (default)",
                target=f"≥ +{TARGET_POINTS:g} points",
                met=after - before >= TARGET_POINTS,
                higher_is_better=True,
                note=(
                    f"{after - before:+.1f} points; chosen: {t['label']} "
                    f"{json.loads(t['values']) or ''}; regret in months 1-6 "
                    f"{t['current_regret']} → {t['best_regret']}"
                ),
            )
        )
