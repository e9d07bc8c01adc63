"""The quality tables as Markdown, from the bench's rows: on the console, and for the README.

    python -m bench.quality.tables OUT.json

prints the tables of a run saved with ``python -m bench --only quality --json OUT.json``
(the README's "Memory quality" section is this output).
"""

from __future__ import annotations

import json
import sys

from .policies import KEEP_ALL, POLICIES

SYNTHETIC = "synthetic"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _policies(rows: list[dict]) -> list[str]:
    return [p for p in [*POLICIES, KEEP_ALL] if any(r["policy"] == p for r in rows)]


def _budgets(items, dataset: str, mode: str) -> list[int]:
    return sorted(
        {i["budget"] for i in items if (i["dataset"], i["mode"]) == (dataset, mode) and i["budget"]}
    )


def _header(first: list[str], policies: list[str]) -> list[str]:
    return [
        "| " + " | ".join(first + policies) + " |",
        "|" + " --- |" * (len(first) + len(policies)),
    ]


def markdown(rows: list[dict], details: list[dict], footer: list[str]) -> str:
    """Answerable@10 (retained), the synthetic year's extra metrics, evictions and pins."""
    policies = _policies(rows)
    by = {(r["dataset"], r["mode"], r["budget"], r["policy"]): r for r in rows}
    groups = sorted({(r["dataset"], r["mode"]) for r in rows})

    def cell(dataset, mode, budget, policy):
        return by.get((dataset, mode, None if policy == KEEP_ALL else budget, policy))

    out = ["Memory quality: answerable@10 % (evidence retained %)", ""]
    out += _header(["dataset", "mode", "budget"], policies)
    for dataset, mode in groups:
        for budget in _budgets(rows, dataset, mode):
            cells = [cell(dataset, mode, budget, p) for p in policies]
            text = [
                "—" if r is None else f"{_pct(r['answerable'])} ({_pct(r['retained'])})"
                for r in cells
            ]
            out.append(f"| {dataset} | {mode} | {budget} | " + " | ".join(text) + " |")
    if any(r["dataset"] == SYNTHETIC for r in rows):
        out += [
            "",
            "Synthetic year: pinned-fact answerable % / high-importance answerable % / "
            "stale answers %",
            "",
        ]
        out += _header(["budget"], policies)
        parts = ("pinned_answerable", "high_answerable", "stale")
        for budget in _budgets(rows, SYNTHETIC, "year"):
            cells = [cell(SYNTHETIC, "year", budget, p) for p in policies]
            text = ["—" if r is None else " / ".join(_pct(r[k]) for k in parts) for r in cells]
            out.append(f"| {budget} | " + " | ".join(text) + " |")
    if details:
        out += _evictions(details, policies, groups)
    out += ["", *footer] if footer else []
    return "\n".join(out)


def _evictions(details: list[dict], policies: list[str], groups) -> list[str]:
    jobs = [{**d["job"], "outcome": d} for d in details]
    by = {(j["dataset"], j["mode"], j["budget"], j["policy"]): j["outcome"] for j in jobs}
    out = ["", "Evictions (all users of the replay):", ""]
    out += _header(["dataset", "mode", "budget"], policies)
    for dataset, mode in groups:
        for budget in _budgets(jobs, dataset, mode):
            text = []
            for p in policies:
                o = by.get((dataset, mode, None if p == KEEP_ALL else budget, p))
                text.append("—" if o is None else f"{o['evictions']:,}")
            out.append(f"| {dataset} | {mode} | {budget} | " + " | ".join(text) + " |")
    out.append("")
    for dataset, mode in groups:
        o = by.get((dataset, mode, None, KEEP_ALL))
        if o is None:
            continue
        pins = o["pins_per_user"] or [0]
        out.append(
            f"- {dataset} {mode}: pinned records per user {sum(pins) / len(pins):.1f} on "
            f"average, {max(pins)} at most; {o['evidence_dropped']} of {o['evidence']} "
            "evidence turns were dropped by the rules at ingest (small talk)."
        )
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m bench.quality.tables OUT.json", file=sys.stderr)
        return 2
    with open(args[0]) as f:
        report = json.load(f)
    rows = [r for r in report["rows"] if r.get("scenario") == "quality" and "dataset" in r]
    if not rows:
        print(f"{args[0]} holds no quality rows (run with --only quality)", file=sys.stderr)
        return 1
    print(markdown(rows, report.get("details", {}).get("quality", []), []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
