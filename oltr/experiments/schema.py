"""The schema of an experiment file: one strict pydantic model per TOML section."""

from __future__ import annotations

import codecs
import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oltr.errors import ConfigFileError
from oltr.validation import check_memory, not_a_file

__all__ = [
    "MAX_HORIZON",
    "ComponentSection",
    "ConfigError",
    "ConfigModel",
    "ExperimentSection",
    "HeldoutSection",
    "LearnerSection",
    "Schedule",
    "read_config_text",
]


class ConfigError(ConfigFileError):
    """An experiment config that cannot be run; ``problems`` lists every reason."""

    def __init__(self, source: str, problems: Iterable[str]) -> None:
        self.source = source
        self.problems = list(problems)
        super().__init__(f"invalid experiment config {source}:\n  " + "\n  ".join(self.problems))


#: The largest horizon: rounds are counted, and averages divided by them, in float64,
#: which holds every integer up to 2**53 exactly.
MAX_HORIZON = 2**53

#: Bytes a checkpoint takes in the schedule (a Python int in a tuple) besides its trace rows.
_CHECKPOINT_BYTES = 40


def read_config_text(path: Path) -> str:
    """The text of a config file: UTF-8, a leading byte-order mark dropped.

    A path that is not a regular file (a folder, a FIFO) is refused without
    opening it, and bytes that are not UTF-8 are named by their offset.
    """
    source = str(path)
    why = not_a_file(path)
    if why is not None:
        raise ConfigError(source, ["file not found" if why == "no such file" else why])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(source, [f"cannot be read ({exc.strerror or exc})"]) from None
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib would raise this untyped
        start = exc.start + skip
        line = raw.count(b"\n", 0, start) + 1
        raise ConfigError(
            source,
            [
                f"not UTF-8 text: byte 0x{raw[start]:02x} at byte offset {start} "
                f"(line {line}) cannot be decoded ({exc.reason}); save the file as UTF-8"
            ],
        ) from None


class _Strict(BaseModel):
    # strict: TOML has real types, so "100" for an int is a mistake, not something to coerce.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Schedule(_Strict):
    """When to record the trace: every ``every`` rounds, or at ``log`` log-spaced rounds."""

    every: int | None = Field(default=None, ge=1)
    log: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _exactly_one(self) -> Schedule:
        if (self.every is None) == (self.log is None):
            raise ValueError(
                "give exactly one of 'every' (rounds) or 'log' (number of checkpoints)"
            )
        return self


class ExperimentSection(_Strict):
    """The ``[experiment]`` table."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    seed: int | None = Field(default=None, ge=0)
    horizon: int = Field(ge=1, le=MAX_HORIZON)
    reps: int = Field(ge=1)
    measures: list[str] = Field(min_length=1)
    schedule: Schedule = Schedule(log=100)
    output: str | None = None
    batch_size: int | None = Field(default=None, ge=1)
    # Protocol options of the runner (RunSetSpec): None leaves them out.
    online_discount: float | None = Field(default=None, gt=0.0, le=1.0)
    no_relevant: float | None = None
    streams: Literal["shared", "per-run"] | None = None

    @model_validator(mode="after")
    def _schedule_fits(self) -> ExperimentSection:
        # Refused before the schedule is built: its checkpoints and one run set's trace
        # (a row per checkpoint and repetition; rep, t and four columns per measure).
        every, log = self.schedule.every, self.schedule.log
        n_cp = -(-self.horizon // every) if every is not None else min(log or 1, self.horizon)
        rows = n_cp * (self.batch_size or self.reps)
        asked = n_cp * _CHECKPOINT_BYTES + rows * (2 + 4 * len(self.measures)) * 8
        key = f"schedule.every = {every}" if every is not None else f"schedule.log = {log}"
        check_memory(
            asked,
            f"{key} over horizon {self.horizon} ({n_cp} checkpoints, a trace of {rows} rows)",
        )
        return self


class ComponentSection(_Strict):
    """An ``[env]`` or ``[feedback]`` table: a registry name and its constructor parameters."""

    name: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)


class LearnerSection(ComponentSection):
    """One ``[[learners]]`` entry; list-valued parameters expand to a grid."""

    label: str | None = Field(default=None, min_length=1)


class HeldoutSection(_Strict):
    """The optional ``[heldout]`` table: a test file (``load_letor`` options) and NDCG@k."""

    path: str = Field(min_length=1)
    group_file: str | None = Field(default=None, min_length=1)
    n_features: int | None = Field(default=None, ge=1)
    normalize: bool | Literal["auto"] = "auto"
    drop_no_relevant: bool = False
    k: int = Field(default=10, ge=1)
    no_relevant: float = 1.0


class ConfigModel(_Strict):
    """The whole document."""

    experiment: ExperimentSection
    env: ComponentSection
    feedback: ComponentSection
    learners: list[LearnerSection] = Field(min_length=1)
    heldout: HeldoutSection | None = None
    sizes: dict[str, dict[str, Any]] = Field(default_factory=dict)


def _loc(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<document>"


_FIELDS: dict[str, type[BaseModel]] = {
    "": ConfigModel,
    "experiment": ExperimentSection,
    "experiment.schedule": Schedule,
    "env": ComponentSection,
    "feedback": ComponentSection,
    "learners": LearnerSection,
    "heldout": HeldoutSection,
}


def _describe(err: Any) -> str:
    loc = tuple(err["loc"])
    where = _loc(loc)
    kind = err["type"]
    if kind == "missing":
        return f"{where}: missing required key"
    if kind == "extra_forbidden":
        parent = ".".join(str(p) for p in loc[:-1] if not isinstance(p, int))
        model = _FIELDS.get(parent)
        hint = ""
        if model is not None:
            valid = sorted(model.model_fields)
            close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join(valid)})"
        return f"{where}: unknown key{hint}"
    message = str(err["msg"]).removeprefix("Value error, ")
    if "input" in err and kind != "value_error":
        return f"{where}: {message}, got {err['input']!r}"
    return f"{where}: {message}"
