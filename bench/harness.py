"""What every scenario shares: rows of the table, checks, timing statistics, the machine.

Nothing here imports Django at module level, so the command can refuse a bad database
before Django is configured.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from memadmin.stats import percentile


@dataclass
class Row:
    """One line of the table. Values are numbers in ``unit``; None prints as a dash.

    ``ratio`` is always "how many times better we are than the baseline": baseline /
    ours for times, ours / baseline for rates (``higher_is_better``).
    """

    scenario: str
    size: str
    ours: float | None
    ours_p99: float | None = None
    base: float | None = None
    base_p99: float | None = None
    unit: str = "ms"
    baseline: str = ""
    target: str = ""
    met: bool | None = None
    higher_is_better: bool = False
    note: str = ""
    tail: str = "p99"  # the percentile in the tail columns (the dashboard's target is p95)
    # Interleaved scenarios: (lowest, highest) of the per-repetition medians and of the
    # per-repetition ratios, printed beside the medians; how many repetitions.
    ours_range: tuple[float, float] | None = None
    base_range: tuple[float, float] | None = None
    ratio_range: tuple[float, float] | None = None
    repetitions: int | None = None
    # The 1-minute load average when the scenario started (set by the command).
    load: float | None = None

    # Set by ``Row.interleaved``: the median of the per-repetition ratios (paired, so
    # load drift between repetitions cancels), rather than a ratio of two medians.
    paired_ratio: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        if not self.ours or not self.base:
            return None
        return self.ours / self.base if self.higher_is_better else self.base / self.ours

    @classmethod
    def interleaved(
        cls, scenario: str, size: str, ours: list[list[float]], base: list[list[float]], **kw
    ) -> Row:
        """A row from repetitions that ran ours and the baseline alternately: the medians
        and tails over every sample, the range of the per-repetition medians, and the
        ratio as the median of the per-repetition ratios (with their range)."""
        higher = kw.get("higher_is_better", False)
        ours_meds = [median(r) for r in ours]
        base_meds = [median(r) for r in base]
        ratios = [
            (o / b if higher else b / o)
            for o, b in zip(ours_meds, base_meds, strict=True)
            if o and b
        ]
        flat_ours = [x for r in ours for x in r]
        flat_base = [x for r in base for x in r]
        return cls(
            scenario,
            size,
            median(flat_ours),
            percentile(flat_ours, 0.99) if len(flat_ours) > 1 else None,
            median(flat_base),
            percentile(flat_base, 0.99) if len(flat_base) > 1 else None,
            ours_range=(min(ours_meds), max(ours_meds)),
            base_range=(min(base_meds), max(base_meds)),
            ratio_range=(min(ratios), max(ratios)) if ratios else None,
            paired_ratio=median(ratios) if ratios else None,
            repetitions=len(ours),
            **kw,
        )


@dataclass
class Check:
    scenario: str
    name: str
    passed: bool
    detail: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    machine: dict = field(default_factory=dict)
    scenarios: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    # Rows that are not timings (the quality scenario's), added to the JSON's "rows"
    # as they are, and tables printed after the main one.
    extra_rows: list[dict] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    details: dict[str, list] = field(default_factory=dict)  # per scenario, JSON only

    def check(self, scenario: str, name: str, passed: bool, detail: str = "") -> bool:
        self.checks.append(Check(scenario, name, bool(passed), detail))
        return bool(passed)

    def as_json(self) -> dict:
        return {
            "machine": self.machine,
            "scenarios": self.scenarios,
            "seconds": self.seconds,
            "rows": [{**asdict(r), "ratio": r.ratio} for r in self.rows] + self.extra_rows,
            "checks": [asdict(c) for c in self.checks],
            **({"details": self.details} if self.details else {}),
        }


# --- statistics ------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values)


def alternate(contenders: dict[str, Callable[[], list[float]]], repetitions: int) -> dict:
    """Run every contender once per repetition, the order rotating each time so none is
    always first; returns each one's samples per repetition. Ours and the baselines
    thus see the same load, repetition by repetition."""
    names = list(contenders)
    out: dict[str, list[list[float]]] = {name: [] for name in names}
    for rep in range(repetitions):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(contenders[name]())
    return out


async def alternate_async(
    contenders: dict, repetitions: int, before_each=None
) -> dict[str, list[list[float]]]:
    """``harness.alternate`` for coroutines: each contender once per repetition, the
    order rotating; ``before_each(rep)``, if given, is awaited before each repetition
    (untimed)."""
    names = list(contenders)
    out: dict[str, list[list[float]]] = {name: [] for name in names}
    for rep in range(repetitions):
        if before_each is not None:
            await before_each(rep)
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(await contenders[name](rep))
    return out


def load_average() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def timed(fn: Callable[[], object], repeat: int, warmup: int = 1) -> list[float]:
    """Milliseconds of ``repeat`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


# --- the machine ---------------------------------------------------------------------


def machine_info(pg_version: str = "") -> dict:
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ram_gib = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    ram_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "ram_gib": ram_gib,
        "postgresql": pg_version,
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in load] if load else None,
    }


# --- the table -----------------------------------------------------------------------


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "ms":
        return (
            f"{value:.2f} ms"
            if value < 10
            else f"{value:.1f} ms"
            if value < 100
            else f"{value:,.0f} ms"
        )
    if unit == "s":
        return f"{value:.2f} s" if value >= 1 else f"{value:.3f} s"
    if unit == "MB":
        return f"{value:,.0f} MB"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def table(report: Report) -> str:
    """The one table, as Markdown (readable in a terminal, pasteable into the README)."""
    header = (
        "| scenario | size | ours (median) | ours (p99) | baseline | baseline (median) "
        "| baseline (p99) | ratio | target | met? | reps | load |"
    )
    lines = [header, "|" + " --- |" * 12]
    for r in report.rows:
        met = {True: "yes", False: "**no**", None: "—"}[r.met]
        lines.append(
            f"| {r.scenario} | {r.size} | {_fmt(r.ours, r.unit)}{_range(r.ours_range, r.unit)} "
            f"| {_fmt(r.ours_p99, r.unit)}"
            f"{'' if r.tail == 'p99' or r.ours_p99 is None else f' ({r.tail})'} "
            f"| {r.baseline or '—'} | {_fmt(r.base, r.unit)}{_range(r.base_range, r.unit)} "
            f"| {_fmt(r.base_p99, r.unit)} "
            f"| {_ratio(r.ratio)}{_ratio_range(r.ratio_range)} | {r.target or '—'} | {met} "
            f"| {r.repetitions or 1} | {'—' if r.load is None else f'{r.load:.2f}'} |"
        )
    return "\n".join(lines)


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}×" if value >= 10 else f"{value:.2f}×"


def _range(span: tuple[float, float] | None, unit: str) -> str:
    if span is None:
        return ""
    return f" ({_fmt(span[0], unit).split()[0]}–{_fmt(span[1], unit)})"


def _ratio_range(span: tuple[float, float] | None) -> str:
    return "" if span is None else f" ({_ratio(span[0])}–{_ratio(span[1])})"


def machine_line(m: dict) -> str:
    load = m.get("load_average_at_start")
    return (
        f"Machine: {m.get('cores')} cores, {m.get('cpu')}, {m.get('ram_gib')} GiB RAM, "
        f"{m.get('postgresql')}, Python {m.get('python')}"
        + (f"; load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}" if load else "")
    )


def checks_text(report: Report) -> str:
    lines = []
    for c in report.checks:
        mark = "ok  " if c.passed else "FAIL"
        lines.append(f"  [{mark}] {c.scenario}: {c.name}" + (f" ({c.detail})" if c.detail else ""))
    return "\n".join(lines)
