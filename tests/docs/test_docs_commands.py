"""Every ``oltr`` command line shown in the documentation names real commands and options.

Commands that need the real LETOR data or run for minutes cannot be run by the
suite; what a renamed command or option would break can still be checked. Each
``oltr …`` line of a shell block (``bash``, ``sh``, ``console``, ``shell``) is
handed to the real command-line application with ``--help`` appended: click
parses every option before it acts on the eager ``--help``, so an unknown
command or option fails with click's usage error (exit 2), and a valid line only
prints its command's help (exit 0) and runs nothing.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from oltr.cli import app

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
SHELLS = {"bash", "sh", "shell", "console"}
#: Where a command line ends: a pipe, a list operator, a redirection or a background job.
_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"}
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: A line that runs ``oltr``, perhaps after variable assignments, ``nice`` or ``time``.
_OLTR_LINE = re.compile(r"^(\$ )?([A-Za-z_]\w*=\S+\s+|nice\s+|time\s+)*oltr(\s|$)")
_MARKDOWN = MarkdownIt("commonmark")


def oltr_command_lines(text: str) -> list[list[str]]:
    """The argument lists (after ``oltr``) of every ``oltr`` command in the page's shell blocks.

    >>> oltr_command_lines("```bash\\nOLTR_DATA_DIR=x nice oltr run a.toml -j 2  # note\\n```\\n")
    [['run', 'a.toml', '-j', '2']]
    """
    found = []
    for token in _MARKDOWN.parse(text):
        if token.type != "fence" or token.info.strip().split(" ")[0] not in SHELLS:
            continue
        for line in token.content.replace("\\\n", " ").splitlines():
            if not _OLTR_LINE.match(line.strip()):
                continue
            words = shlex.split(line.strip().removeprefix("$ "), comments=True)
            while _ENV_ASSIGNMENT.match(words[0]) or words[0] in {"nice", "time"}:
                words.pop(0)
            args = []
            for word in words[1:]:
                if word in _OPERATORS:
                    break
                args.append(word)
            found.append(args)
    return found


CASES = [
    pytest.param(args, id=f"{page.relative_to(ROOT).as_posix()}:{' '.join(args)[:60]}")
    for page in PAGES
    for args in oltr_command_lines(page.read_text(encoding="utf-8"))
]


def test_the_docs_show_commands() -> None:
    # The extraction itself must find the commands the pages are known to hold.
    assert any(args[:1] == ["reproduce"] for args in (c.values[0] for c in CASES))
    assert any(args[:1] == ["serve"] for args in (c.values[0] for c in CASES))


@pytest.mark.parametrize("args", CASES)
def test_command_line_parses(args: list[str]) -> None:
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, f"`oltr {' '.join(args)}`: {result.output.strip()[-400:]}"


@pytest.mark.parametrize(
    "args", [["reproduce", "--no-such-option"], ["no-such-command"], ["data", "nope"]]
)
def test_a_wrong_command_line_fails(args: list[str]) -> None:
    # The check above can fail: a renamed option or command is a usage error.
    assert CliRunner().invoke(app, [*args, "--help"]).exit_code == 2
