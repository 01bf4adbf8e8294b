"""The documentation works: every Python example runs, every relative link resolves.

Every ```python block of ``docs/**/*.md`` and ``README.md`` is run: one test per
page, its blocks in order in one namespace, in a temporary working directory.
A block is left out only when the line before it is ``<!-- skip: reason -->``;
the reason becomes the test's skip reason.
"""

from __future__ import annotations

import os
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

import oltr.build  # noqa: F401  (fills the registries before the tests copy them)
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS, PARAMETER_DUELERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [*sorted(DOCS.rglob("*.md")), README]
SHARED_DATA = ROOT.parent / "shared" / "data"
SKIP = re.compile(r"<!--\s*skip:\s*(?P<reason>.*?)\s*-->")
#: What the README must start with: the two commands, each its own fenced bash block.
README_START = (
    "```bash\npip install . && oltr demo\n```\n\n"
    '```bash\npip install ".[test]" && python -m pytest\n```\n'
)
_MARKDOWN = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class Block:
    """One fenced Python block of a page."""

    line: int  # 1-based line of the opening fence
    code: str
    skip: str | None  # the reason given in a skip comment on the line before, if any


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _tokens(path: Path) -> list[Token]:
    return _MARKDOWN.parse(path.read_text(encoding="utf-8"))


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for token in _tokens(path):
        if token.type != "fence" or token.info.strip().split()[:1] != ["python"]:
            continue
        assert token.map is not None
        start = token.map[0]
        match = SKIP.fullmatch(lines[start - 1].strip()) if start > 0 else None
        reason = match.group("reason") if match else None
        blocks.append(Block(start + 1, token.content, reason))
    return blocks


def relative_links(path: Path) -> list[str]:
    """Targets of the links and images of ``path`` that point into the repository."""
    targets = []
    for token in _tokens(path):
        for child in token.children or []:
            attr = {"link_open": "href", "image": "src"}.get(child.type)
            target = child.attrGet(attr) if attr else None
            if isinstance(target, str) and not urlsplit(target).scheme:
                targets.append(target)
    return targets


EXAMPLE_PAGES = [page for page in PAGES if python_blocks(page)]


def test_the_pages_hold_examples() -> None:
    # The collection itself can fail: the guides carry runnable examples.
    assert README in EXAMPLE_PAGES
    assert DOCS / "getting-started.md" in EXAMPLE_PAGES
    assert len(EXAMPLE_PAGES) >= 10


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=_rel)
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    if "OLTR_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        monkeypatch.setenv("OLTR_DATA_DIR", str(SHARED_DATA))
    # An example may register components; the registries are as before after the page.
    for registry in (LEARNERS, ENVIRONMENTS, FEEDBACK_MODELS, PARAMETER_DUELERS):
        monkeypatch.setattr(registry, "_table", dict(registry._table))
    # The page's namespace is a module, so classes it defines pickle and dataclasses work.
    module = types.ModuleType("docs_example_" + re.sub(r"\W", "_", _rel(page)[:-3]))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    skipped = []
    for block in python_blocks(page):
        if block.skip is not None:
            skipped.append(f"line {block.line}: {block.skip}")
            continue
        code = compile(block.code, f"{_rel(page)}:{block.line}", "exec")
        exec(code, module.__dict__)
    if skipped:
        pytest.skip("; ".join(skipped))


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    assert text.startswith(README_START)


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_point_at_files(page: Path) -> None:
    missing = []
    for target in relative_links(page):
        path = urlsplit(target).path
        if path and not (page.parent / path).is_file():
            missing.append(target)
    assert not missing, f"{_rel(page)} links to files that do not exist: {missing}"


#: A file of the repository named in the text, e.g. ``tests/data/test_letor.py``.
REPO_PATH = re.compile(r"(?<![\w/.-])((?:tests|examples|benchmarks|oltr)/[\w/.-]*\.(?:py|toml))\b")
PLACEHOLDER = re.compile(r"\b[A-Z]{2,}\b|<")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_repository_paths_named_exist(page: Path) -> None:
    # Files move (tests were shelved by package); the pages must follow them.
    text = page.read_text(encoding="utf-8")
    named = {m.group(1) for m in REPO_PATH.finditer(text) if not PLACEHOLDER.search(m.group(1))}
    named |= {f"benchmarks/{m}" for m in re.findall(r"`(bench_\w+\.py)`", text)}
    missing = sorted(path for path in named if not (ROOT / path).is_file())
    assert not missing, f"{_rel(page)} names files that do not exist: {missing}"


def test_skip_comments_and_links_are_found(tmp_path: Path) -> None:
    # The parsing the tests above rely on, on a page written here.
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n[a](other.md#x) ![i](img.png) [w](https://example.org)\n\n"
        "```python\nx = 1\n```\n\n<!-- skip: needs a server -->\n```python\nserve()\n```\n\n"
        "```bash\nls\n```\n",
        encoding="utf-8",
    )
    assert python_blocks(page) == [
        Block(5, "x = 1\n", None),
        Block(10, "serve()\n", "needs a server"),
    ]
    assert relative_links(page) == ["other.md#x", "img.png"]
