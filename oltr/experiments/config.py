"""Experiment configs: TOML files, validated on load, expanded into run sets.

An experiment is one TOML file (read with the standard library's ``tomllib``)::

    [experiment]
    name = "top1-demo"            # also the default output folder: results/<name>
    description = "one line shown by `oltr reproduce --list`"
    seed = 2016                   # root seed; omitted => fresh entropy, recorded
    horizon = 10_000              # rounds T
    reps = 10                     # repetitions (seeds 0..reps-1)
    measures = ["sumloss", "ndcg@5"]
    schedule = { log = 60 }       # record at 60 log-spaced rounds; or { every = 100 }
    output = "results/top1-demo"  # optional; relative to the working directory
    batch_size = 5                # optional; at most this many reps per run set
    online_discount = 0.9995      # optional: also online:M = Σ_t γ^(t-1) M_t per measure
    no_relevant = 0.0             # optional: a list without a relevant item scores this
    streams = "per-run"           # optional: each repetition its own environment stream

    [env]
    name = "fixed-items-v1"
    params = { n_items = 5 }      # params named path, *_path or *_file are data files,
                                  # relative to the folder of this TOML file

    [feedback]
    name = "top-k"
    params = { k = 1 }

    [[learners]]
    name = "rtop1f"
    params = { eta = [0.01, 0.1] }   # a list is a grid: two run sets
    label = "RTop-1F"                # optional; default the learner's name

    [heldout]                     # optional: NDCG@k of the learner's weights on a test file
    path = "data/test.txt"        # relative to the folder of this TOML file, like [env]
    k = 10                        # optional (10); also group_file, n_features, normalize,
                                  # drop_no_relevant (as load_letor) and no_relevant
    normalize = "auto"            # optional: per-query min-max when a value lies outside
                                  # [0, 1] (the default, as [env] letor-stream-v1); true, false

    [sizes.small]                 # optional overrides picked with --size small
    experiment.horizon = 1_000
    experiment.reps = 3

Grids
    Every list-valued learner parameter is a list of alternatives; the settings are
    the Cartesian product over parameters in the order written. A parameter whose
    value is itself a list is passed by wrapping it in another list:
    ``weights = [[0.5, 0.5]]`` is one setting with ``weights = [0.5, 0.5]``, and
    ``weights = [[1, 0], [0, 1]]`` two settings. Environment and feedback
    parameters are passed as written (no grid).

Run sets
    Each (learner, parameter setting) becomes one run set that advances all its
    repetitions together as a batch. With ``batch_size = b`` the repetitions are
    split into consecutive chunks of at most ``b`` (one run set each); the results
    are the same because every repetition's random streams are keyed by its
    index, not by its batch (``oltr.experiments.runner``), and smaller batches
    spread over more worker processes and lose less work when interrupted.

Held-out evaluation
    With a ``[heldout]`` table every run set also records ``heldout:ndcg@k``, the
    mean NDCG@k over the test file's queries of each learner's current weights
    at every checkpoint (:mod:`oltr.experiments.runner`; NaN for learners
    without weights). The test file must have as many features as the stream;
    the environment must show feature lists.

Sizes
    ``[sizes.NAME]`` tables are partial configs (TOML dotted keys keep them short)
    merged over the document when ``size=NAME`` is asked for: tables merge key by
    key, any other value (including the ``learners`` array) is replaced whole.

Validation happens entirely at load time, before any work: the structure through
pydantic models (unknown keys, wrong types, out-of-range values), then names and
parameters through :mod:`oltr.registry` (``check_env``, ``check_feedback``,
``check_learner``, ``check_compatible``), the measure strings through
:func:`oltr.metrics.get_measure`, and data files (``[env]`` and ``[heldout]``):
they must exist and are parsed (:mod:`oltr.experiments.datacheck`), so a
malformed line is reported as ``file:line``. Every problem is reported at
once, each prefixed with the key it concerns, e.g.
``learners[1].params: eta must be > 0, got -1``; every problem of a learner
setting too, not only the first (:func:`oltr.build.learner_problems`).
A file that is not UTF-8 is reported with the byte offset of the first bad byte; a
leading UTF-8 byte-order mark is dropped; a folder or a FIFO is named as such, unopened.
"""

from __future__ import annotations

import copy
import difflib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

import oltr.registry as registry
from oltr import build
from oltr.experiments.datacheck import check_env_data, check_heldout_data
from oltr.experiments.datapaths import _resolve_data_paths
from oltr.experiments.grid import checkpoint_schedule, expand_grid
from oltr.experiments.runner import RunSetSpec, check_heldout
from oltr.experiments.schema import ConfigError, ConfigModel, _describe, read_config_text
from oltr.experiments.storage import run_set_id
from oltr.metrics import get_measure
from oltr.types import Context

__all__ = ["Experiment", "PlannedRunSet", "load_config", "parse_config"]


# ----------------------------------------------------------------------------- structure


# ----------------------------------------------------------------------------- results of loading


@dataclass(frozen=True)
class PlannedRunSet:
    """One run set of an experiment: its spec and how reports name it.

    ``group`` optionally names the part of the experiment the run set belongs to
    (a data set, a problem) for reports that tabulate by it; it is recorded with
    the run set and does not enter its id.
    """

    spec: RunSetSpec
    label: str
    params: dict[str, Any]
    learner_index: int
    run_set_id: str = field(init=False)
    group: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "run_set_id", run_set_id(self.spec))


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: the resolved document and its run sets.

    ``resolved`` is the document actually run (size applied, seed filled in, data
    paths made absolute, ``sizes`` dropped); it is stored with every result.
    ``reproduction`` is the name of the packaged reproduction it is (None for a
    config of one's own); it is recorded in the results folder's manifest so that
    a report rebuilt from the folder alone can add the reproduction's own tables.
    """

    name: str
    description: str
    source: str
    size: str | None
    seed: int
    seed_drawn: bool
    output: Path
    measures: tuple[str, ...]
    horizon: int
    checkpoints: tuple[int, ...]
    run_sets: tuple[PlannedRunSet, ...]
    resolved: dict[str, Any]
    reproduction: str | None = None


# ----------------------------------------------------------------------------- public helpers


def load_config(path: str | Path, *, size: str | None = None) -> Experiment:
    """Read, validate and expand an experiment TOML file.

    Relative data paths in ``[env] params`` are resolved against the file's folder.
    Raises :class:`ConfigError` (a ``ValueError``) listing every problem found.
    """
    path = Path(path)
    source = str(path)
    text = read_config_text(path)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message carries line and column
        raise ConfigError(source, [f"TOML syntax error: {exc}"]) from None
    return parse_config(document, source=source, base_dir=path.resolve().parent, size=size)


def parse_config(
    document: Mapping[str, Any],
    *,
    source: str = "<config>",
    base_dir: str | Path | None = None,
    size: str | None = None,
) -> Experiment:
    """Validate and expand an already parsed config document (see :func:`load_config`)."""
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    doc = _apply_size(document, size, source)
    try:
        model = ConfigModel.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(source, [_describe(err) for err in exc.errors()]) from None
    problems: list[str] = []
    env_params, width = _check_components(model, base, problems)
    heldout = _check_heldout(model, base, problems, width)
    settings = _learner_settings(model, env_params, problems)
    if problems:
        raise ConfigError(source, problems)

    exp = model.experiment
    seed_drawn = exp.seed is None
    # Only the experiment root may take fresh entropy; it is recorded with the results.
    seed = _fresh_entropy() if exp.seed is None else exp.seed
    every, log = exp.schedule.every, exp.schedule.log
    checkpoints = checkpoint_schedule(exp.horizon, every=every, log=log)
    chunk = exp.batch_size or exp.reps
    rep_chunks = [tuple(range(i, min(i + chunk, exp.reps))) for i in range(0, exp.reps, chunk)]
    run_sets: list[PlannedRunSet] = []
    for index, label, setting in settings:
        for reps in rep_chunks:
            spec = RunSetSpec(
                env=model.env.name,
                env_params=copy.deepcopy(env_params),
                feedback=model.feedback.name,
                feedback_params=copy.deepcopy(model.feedback.params),
                learner=model.learners[index].name,
                learner_params=copy.deepcopy(setting),
                reps=reps,
                seed=seed,
                horizon=exp.horizon,
                measures=tuple(exp.measures),
                checkpoints=checkpoints,
                heldout=copy.deepcopy(heldout),
                online_discount=exp.online_discount,
                no_relevant=exp.no_relevant,
                streams=exp.streams,
            )
            run_sets.append(PlannedRunSet(spec, label, setting, index))
    _check_unique_ids(run_sets, source)

    resolved = json.loads(model.model_dump_json(exclude={"sizes"}))
    resolved["experiment"]["seed"] = seed
    for key in ("online_discount", "no_relevant", "streams"):  # unset: the document is unchanged
        if resolved["experiment"][key] is None:
            del resolved["experiment"][key]
    resolved["env"]["params"] = json.loads(json.dumps(env_params))
    if heldout is None:
        del resolved["heldout"]  # the resolved document of a config without one is unchanged
    else:
        resolved["heldout"] = json.loads(json.dumps(heldout))
    output = Path(exp.output) if exp.output is not None else Path("results") / exp.name
    return Experiment(
        name=exp.name,
        description=exp.description,
        source=source,
        size=size,
        seed=seed,
        seed_drawn=seed_drawn,
        output=output,
        measures=tuple(exp.measures),
        horizon=exp.horizon,
        checkpoints=checkpoints,
        run_sets=tuple(run_sets),
        resolved=resolved,
    )


# ----------------------------------------------------------------------------- internals

_SECTIONS = ("experiment", "env", "feedback", "learners", "heldout")


def _apply_size(document: Mapping[str, Any], size: str | None, source: str) -> dict[str, Any]:
    doc = copy.deepcopy(dict(document))
    sizes = doc.get("sizes", {})
    if size is None:
        return doc
    if not isinstance(sizes, dict) or size not in sizes:
        known = ", ".join(sorted(sizes)) if isinstance(sizes, dict) and sizes else "none"
        raise ConfigError(source, [f"sizes: no [sizes.{size}] table (sizes defined: {known})"])
    override = sizes[size]
    if not isinstance(override, dict):
        raise ConfigError(source, [f"sizes.{size}: must be a table, got {override!r}"])
    bad = [key for key in override if key not in _SECTIONS]
    if bad:
        raise ConfigError(
            source,
            [f"sizes.{size}.{key}: unknown section (valid: {', '.join(_SECTIONS)})" for key in bad],
        )
    return _deep_merge(doc, override)


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _fresh_entropy() -> int:
    entropy = np.random.SeedSequence().entropy
    assert isinstance(entropy, int)  # drawn by SeedSequence itself, never a sequence
    return entropy


def _check(where: str, problems: list[str], fn: Any, *args: Any, **kwargs: Any) -> bool:
    """Call a registry check; record its message under ``where``; True when it passed."""
    try:
        fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        problems.append(f"{where}: {exc}")
        return False
    return True


def _check_components(
    model: ConfigModel, base: Path, problems: list[str]
) -> tuple[dict[str, Any], int | None]:
    """Check measures, environment, feedback and data files.

    Returns the env params with data paths resolved, and the width of the
    environment's data file (None without one).
    """
    for i, measure in enumerate(model.experiment.measures):
        _check(f"experiment.measures[{i}]", problems, get_measure, measure)
    n_before = len(problems)
    env_params = _resolve_data_paths(model.env.params, base, problems)
    files_ok = len(problems) == n_before  # else the env check would only repeat the path
    width = None
    if _known("env", model.env.name, registry.ENVIRONMENTS, problems) and files_ok:
        if _check("env.params", problems, build.check_env, model.env.name, env_params):
            width = check_env_data(model.env.name, env_params, problems)
    if _known("feedback", model.feedback.name, registry.FEEDBACK_MODELS, problems):
        _check(
            "feedback.params",
            problems,
            build.check_feedback,
            model.feedback.name,
            model.feedback.params,
        )
    for i, entry in enumerate(model.learners):
        _known(f"learners[{i}]", entry.name, _LearnerNames(), problems)
    return env_params, width


def _check_heldout(
    model: ConfigModel, base: Path, problems: list[str], width: int | None
) -> dict[str, Any] | None:
    """The ``[heldout]`` table with data paths resolved and defaults filled in (None if absent).

    Its file is read as the runner will, and must have ``width`` features when known.
    """
    if model.heldout is None:
        return None
    table = _resolve_data_paths(model.heldout.model_dump(), base, problems, where="heldout")
    env_cls = registry.ENVIRONMENTS.get(model.env.name)
    kind = getattr(env_cls, "context_kind", None)
    if kind is not None and kind != "features":
        problems.append(
            f"heldout: held-out evaluation scores linear weights on feature lists, but"
            f" environment {model.env.name!r} produces {kind!r} contexts"
        )
    try:
        checked = check_heldout(table)
    except (ValueError, TypeError) as exc:  # what the structure check cannot see, e.g. NaN
        text = str(exc)
        problems.append(text if text.startswith("heldout:") else text.replace(" ", ": ", 1))
        return None
    assert checked is not None  # the table is not None
    check_heldout_data(checked, width, problems)
    return checked


class _LearnerNames(dict[str, Any]):
    """Registered learner names, and any ``module:Class`` name (checked when built)."""

    def __init__(self) -> None:
        super().__init__(registry.LEARNERS.items())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (":" in name or super().__contains__(name))


def _known(where: str, name: str, table: Mapping[str, Any], problems: list[str]) -> bool:
    if name in table:
        return True
    kind = {"env": "environment", "feedback": "feedback model"}.get(where, "learner")
    close = difflib.get_close_matches(name, list(table), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    problems.append(
        f"{where}.name: unknown {kind} {name!r}{hint}; valid: {', '.join(sorted(table))}"
    )
    return False


def _file_params(
    where: str, shown: str, setting: Mapping[str, Any], problems: list[str], found: list[str]
) -> bool:
    """File each problem of one setting, one that starts with a parameter under its key."""
    suffix = f" (setting {shown})" if shown else ""
    for text in found:
        key = next((k for k in setting if text.startswith(f"{k} ")), None)
        if key is None:
            problems.append(f"{where}{suffix}: {text}")
        else:
            problems.append(f"{where}.{key}{suffix}: {text[len(key) + 1 :]}")
    return not found


def _fmt(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _first_context(
    model: ConfigModel, env_params: dict[str, Any], problems: list[str]
) -> Context | None:
    """Round 1's context, on which every learner setting is tried before any work."""
    where = "env"
    try:
        return build.first_context(
            model.env.name, env_params, model.feedback.name, model.feedback.params
        )
    except (ValueError, TypeError, OSError) as exc:
        problems.append(f"{where}: {exc}")
        return None


def _learner_settings(
    model: ConfigModel, env_params: dict[str, Any], problems: list[str]
) -> list[tuple[int, str, dict[str, Any]]]:
    """(learner index, label, setting) for every grid point; checks params and labels."""
    # The exact compatibility check needs every component to be valid on its own.
    parts_ok = not problems
    context = _first_context(model, env_params, problems) if parts_ok else None
    out: list[tuple[int, str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(model.learners):
        try:
            settings = expand_grid(entry.params)
        except ValueError as exc:
            problems.append(f"learners[{i}].params.{exc}")
            continue
        varying = [k for k, v in entry.params.items() if isinstance(v, list) and len(v) > 1]
        base = entry.label or entry.name
        compatible_checked = False
        for setting in settings:
            shown = ", ".join(f"{k}={_fmt(setting[k])}" for k in varying)
            if entry.name in _LearnerNames():
                found = build.learner_problems(
                    entry.name, setting, horizon=model.experiment.horizon, context=context
                )
                ok = _file_params(f"learners[{i}].params", shown, setting, problems, found)
                if ok and parts_ok and not compatible_checked:
                    # Once per entry: a mismatch of kinds repeats for every grid point.
                    compatible_checked = True
                    _check(
                        f"learners[{i}]",
                        problems,
                        build.check_compatible,
                        entry.name,
                        model.feedback.name,
                        learner_params=setting,
                        feedback_params=model.feedback.params,
                        env=model.env.name,
                        env_params=env_params,
                    )
            label = base
            if varying:
                label += " (" + ", ".join(f"{k}={_fmt(setting[k])}" for k in varying) + ")"
            if label in seen and seen[label] != i:
                problems.append(
                    f"learners[{i}].label: {label!r} is also the label of learners[{seen[label]}];"
                    " give each entry a distinct label"
                )
            seen.setdefault(label, i)
            out.append((i, label, setting))
    return out


def _check_unique_ids(run_sets: list[PlannedRunSet], source: str) -> None:
    first: dict[str, PlannedRunSet] = {}
    problems = []
    for rs in run_sets:
        other = first.setdefault(rs.run_set_id, rs)
        if other is not rs:
            problems.append(
                f"learners[{rs.learner_index}]: same learner and parameters as"
                f" learners[{other.learner_index}] ({rs.label!r}); remove the duplicate"
            )
    if problems:
        raise ConfigError(source, problems)
