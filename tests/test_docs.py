"""The documentation: every setting documented, every internal link resolves, the site builds.

The README is the front page; the reference lives in docs/ (one page per subject, other
features add theirs), so a variable counts as documented when any page there names it.
Anchors are checked against the slugs MkDocs gives headings (Python-Markdown's toc),
and a linked heading must get the same slug on GitHub, where the pages are read too.
"""

import ast
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SETTINGS = ROOT / "memadmin" / "settings.py"
# settings.py's own readers of the environment (each takes the variable's name first).
ENV_HELPERS = {"env_bool", "env_seconds", "env_list", "env_count"}

# Only over our own files (never user text): [text](target) and ![alt](target "title").
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def prose_lines(path: Path):
    """(number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def env_vars_read_by_settings() -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        key = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            dotted = ast.unparse(func)
            if dotted in {"os.environ.get", "os.getenv"} or (
                isinstance(func, ast.Name) and func.id in ENV_HELPERS
            ):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            names.add(key.value)
    return names


def words_in_docs() -> set[str]:
    words = set()
    for page in DOCS.rglob("*.md"):
        words.update(re.split(r"[^A-Za-z0-9_]+", page.read_text()))
    return words


def heading_text(raw: str) -> str:
    """What a heading reads as: inline code kept, links and emphasis marks dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    return text.replace("`", "").replace("*", "")


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's toc slugify (MkDocs' default)."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def github_slug(text: str) -> str:
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> dict[str, str]:
    """slug -> heading text, with MkDocs' -1, -2 suffixes for repeated headings."""
    found: dict[str, str] = {}
    for _, line in prose_lines(path):
        match = HEADING.match(line)
        if match:
            text = heading_text(match.group(2))
            slug, n = mkdocs_slug(text), 0
            while (slug if n == 0 else f"{slug}-{n}") in found:
                n += 1
            found[slug if n == 0 else f"{slug}-{n}"] = text
    return found


def internal_links(path: Path):
    """(line number, target) of every link that is not to another site."""
    for number, line in prose_lines(path):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                yield number, target


def broken(path: Path, target: str) -> str | None:
    file_part, _, anchor = target.partition("#")
    goal = (path.parent / file_part).resolve() if file_part else path
    if not goal.exists():
        return "no such file"
    if path.is_relative_to(DOCS) and not goal.is_relative_to(DOCS):
        return "outside docs/ (the site cannot link there)"
    if anchor and goal.suffix == ".md":
        headings = anchors(goal)
        if anchor not in headings:
            return f"no heading with anchor #{anchor} in {goal.relative_to(ROOT)}"
        if github_slug(headings[anchor]) != anchor:
            return f"GitHub names that heading #{github_slug(headings[anchor])}"
    return None


def test_the_settings_parser_finds_the_variables_settings_reads():
    names = env_vars_read_by_settings()
    # one of each way settings.py reads the environment
    assert {"DATABASE_URL", "DEBUG", "ALLOWED_HOSTS", "PROXY_COUNT"} <= names
    assert {"MEMADMIN_TASK_TIME_LIMIT", "MEMADMIN_ERASURE_BATCH_SIZE", "LOG_LEVEL"} <= names


def test_every_environment_variable_settings_reads_is_documented():
    missing = sorted(env_vars_read_by_settings() - words_in_docs())
    assert not missing, f"settings.py reads these, but no page in docs/ names them: {missing}"


def test_every_internal_link_resolves():
    problems = [
        f"{path.relative_to(ROOT)}:{number}: {target}: {why}"
        for path in pages()
        for number, target in internal_links(path)
        if (why := broken(path, target))
    ]
    assert not problems, "\n".join(problems)


def test_the_link_check_catches_a_broken_file_and_a_broken_anchor(tmp_path):
    page = DOCS / "configuration.md"
    assert broken(page, "policy.md#which-apps-exist") is None
    assert broken(page, "#variables-read-outside-the-settings") is None
    assert broken(page, "no-such-page.md") == "no such file"
    assert "no heading with anchor #nowhere" in broken(page, "policy.md#nowhere")
    assert "outside docs/" in broken(page, "../README.md")


def test_the_readme_stays_short_and_links_into_the_reference():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 15_000
    assert "make run" in readme and "make test" in readme  # .ci/run runs its test command
    linked = {target.partition("#")[0] for _, target in internal_links(ROOT / "README.md")}
    assert {"docs/configuration.md", "docs/adk-services.md", "docs/http-api.md"} <= linked


def test_the_site_builds_strictly(tmp_path):
    """What `make docs` runs: a broken link, anchor or nav entry fails the build."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "erasure" / "index.html").exists()
    assert (tmp_path / "screenshots" / "overview.png").exists()


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Erasure (compliance)", "erasure-compliance"),
        ("What it deletes: the data inventory", "what-it-deletes-the-data-inventory"),
        ("Dry-run, then apply exactly that plan", "dry-run-then-apply-exactly-that-plan"),
    ],
)
def test_slugs_match_mkdocs_and_github(heading, slug):
    assert mkdocs_slug(heading) == slug == github_slug(heading)
