"""User text never reaches a backtracking regular expression.

App code matches text with RE2 (linear time) or with plain scans; Python's ``re`` is
allowed only in modules whose every pattern runs on text we wrote ourselves, each named
here with the reason. A new ``import re`` in app code fails this test until it is
either replaced or added below with its reason.
"""

from __future__ import annotations

import ast

from tests.test_import_graph import PACKAGES, ROOT

OURS_ONLY = {
    "erasure/inventory.py": "re.escape builds key patterns; keys are matched by RE2",
    "memadmin/pseudonyms.py": "URL route patterns, written in our urls.py",
    "records/one_trip.py": "placeholders in our own SQL",
    "records/server_functions.py": "parameters in our own SQL",
}
# The benchmark and the tests compare against Python's re on purpose, or parse the
# benchmark's own data files; migrations are history.
NOT_APP_CODE = ("bench", "migrations")


def _imports_re(path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "re" and not node.level:
            return True
    return False


def _app_files():
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if not set(relative.parts) & set(NOT_APP_CODE):
                yield relative.as_posix(), path


def test_python_re_only_where_every_pattern_runs_on_our_own_text():
    importing = {name for name, path in _app_files() if _imports_re(path)}
    assert importing - OURS_ONLY.keys() == set(), (
        "app code importing Python's backtracking re: use re2 or a scan, or list the "
        "module in OURS_ONLY with the reason no user text reaches it"
    )
    assert OURS_ONLY.keys() - importing == set(), "OURS_ONLY names a module that no longer uses re"


def test_the_check_sees_both_forms_of_import_and_not_re2(tmp_path):
    inside, named, other = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    inside.write_text("def f():\n    import re\n")
    named.write_text("from re import fullmatch\n")
    other.write_text("import re2\nfrom . import re\n")
    assert _imports_re(inside) and _imports_re(named)
    assert not _imports_re(other)
