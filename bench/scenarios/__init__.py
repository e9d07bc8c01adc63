"""One module per scenario; each has ``run(report, size, env)`` and starts from empty tables."""

from importlib import import_module


def run(name: str, report, size: dict, env: dict[str, str]) -> None:
    import_module(f"{__name__}.{name}").run(report, size, env)
