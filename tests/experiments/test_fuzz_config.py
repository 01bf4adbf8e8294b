"""Property-based fuzzing of the experiment-config loader: a valid experiment or a ConfigError.

Three sources of bad configs, each must give either a validated
:class:`~oltr.experiments.config.Experiment` or a
:class:`~oltr.experiments.schema.ConfigError` listing the problems — never
another exception type (``TypeError``, ``KeyError``, ``OverflowError``,
``MemoryError``, a numpy error from a learner built with absurd settings):

* arbitrary bytes as the file;
* the packaged configs (those on built-in data) with random bytes inserted,
  deleted or replaced in their text;
* the same configs as parsed documents with one value anywhere replaced by a
  random TOML value (numbers of every size and sign, NaN, ±inf, strings, lists,
  tables), one key deleted or an unknown key added.
"""

from __future__ import annotations

import tempfile
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oltr.experiments.config import load_config, parse_config
from oltr.experiments.schema import ConfigError

#: Bounded: the whole file runs in well under a minute; derandomized, so CI is repeatable.
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

#: Packaged configs that need no data files (so the fuzz runs on a fresh machine).
BUILT_IN = (
    "baselines-synthetic.toml",
    "ct15-fig2.toml",
    "ailon14-thm31.toml",
    "ailon14-spearman.toml",
    "yj09-table2.toml",
    "ct16-fig1.toml",
)
CONFIGS = resources.files("oltr.reproductions").joinpath("configs")
TEXTS = {name: CONFIGS.joinpath(name).read_bytes() for name in BUILT_IN}


def _load_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.toml"
        path.write_bytes(data)
        try:
            load_config(path)
        except ConfigError as exc:
            assert str(path) in str(exc)  # the error names the file


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_a_config_error_or_a_config(data: bytes) -> None:
    _load_bytes(data)


@FUZZ
@given(
    name=st.sampled_from(BUILT_IN),
    edits=st.lists(
        st.tuples(
            st.floats(0, 1),
            st.sampled_from(["insert", "delete", "replace"]),
            st.binary(min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_byte_mutations_of_packaged_configs(
    name: str, edits: list[tuple[float, str, bytes]]
) -> None:
    data = bytearray(TEXTS[name])
    for where, how, chunk in edits:
        at = int(where * len(data))
        if how == "insert":
            data[at:at] = chunk
        elif how == "delete":
            del data[at : at + len(chunk)]
        else:
            data[at : at + len(chunk)] = chunk
    _load_bytes(bytes(data))


TOML_VALUES = st.recursive(
    st.none().map(lambda _: "")
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["rtopk", "top-k", "full", "ndcg@10", "squared", "letor-stream-v1", "-1"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a parsed TOML document (list items by index)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


@FUZZ
@given(
    name=st.sampled_from(BUILT_IN),
    pick=st.floats(0, 1, exclude_max=True),
    how=st.sampled_from(["replace", "delete", "add"]),
    value=TOML_VALUES,
)
def test_value_mutations_of_packaged_configs(name: str, pick: float, how: str, value: Any) -> None:
    document = tomllib.loads(TEXTS[name].decode())
    paths = _paths(document)
    path = paths[int(pick * len(paths))]
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if how == "replace":
        parent[path[-1]] = value
    elif how == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent["unknown_key_x"] = value
    try:
        parse_config(document, source=name, base_dir=Path("."))
    except ConfigError as exc:
        assert exc.problems, "a ConfigError lists at least one problem"
