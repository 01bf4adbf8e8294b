"""Data files named in a config, parsed when the config is loaded, before any work.

A config names LETOR files in ``[env] params`` (``path``, ``group_file``) and in
``[heldout]``. :func:`~oltr.experiments.config.load_config` reads each one as
the run will (:func:`oltr.data.letor.load_letor` with the same options, which
fills the binary cache the run then reads), so a malformed file is reported
with its ``file:line`` among the config's problems, under the key that names
it, instead of failing a run set after others have started; and a held-out
file whose width differs from the stream's is reported too.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oltr import build
from oltr.data.letor import load_letor
from oltr.experiments.datapaths import _is_data_key

__all__ = ["check_env_data", "check_heldout_data"]


def _where(params: Mapping[str, Any], prefix: str, text: str) -> str:
    """The key of the data file an error message starts with, else ``prefix``."""
    for key, value in params.items():
        if _is_data_key(key) and isinstance(value, str) and text.startswith(f"{value}:"):
            return f"{prefix}.{key}"
    return prefix


def check_env_data(env: str, params: Mapping[str, Any], problems: list[str]) -> int | None:
    """Read the data file environment ``env`` names in ``params``; its number of features.

    None when ``params`` names no data file, the environment reads none, or the
    file is malformed (then the problem is filed under its key).
    """
    if not any(_is_data_key(k) and v is not None for k, v in params.items()):
        return None
    try:
        data = getattr(build.make_env(env, params), "data", None)
        return int(data().n_features) if callable(data) else None
    except (ValueError, TypeError, OSError) as exc:
        problems.append(f"{_where(params, 'env.params', str(exc))}: {exc}")
        return None


def check_heldout_data(
    heldout: Mapping[str, Any], n_features: int | None, problems: list[str]
) -> None:
    """Read the held-out file of a checked ``[heldout]`` table as the runner will.

    ``n_features`` is the stream's width when known: the file must match it.
    Missing files are left to the path check, which has already said so.
    """
    files = [heldout[k] for k in ("path", "group_file") if heldout.get(k) is not None]
    if not all(Path(f).is_file() for f in files):
        return
    try:
        dataset = load_letor(
            heldout["path"],
            group_file=heldout["group_file"],
            n_features=heldout["n_features"],
            normalize=heldout["normalize"],
            drop_no_relevant=heldout["drop_no_relevant"],
        )
    except (ValueError, TypeError, OSError) as exc:
        problems.append(f"{_where(heldout, 'heldout', str(exc))}: {exc}")
        return
    if n_features is not None and dataset.n_features != n_features:
        problems.append(
            f"heldout.path: the held-out data {heldout['path']} has {dataset.n_features} "
            f"features but the stream has {n_features}; they must match (a file that leaves "
            "out trailing features can be widened with heldout.n_features)"
        )
