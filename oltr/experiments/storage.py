"""Results on disk: one Parquet trace and one JSON record per run set, written atomically.

Layout of a results folder::

    RESULTS_DIR/
      experiment.json        the resolved config last run here and its run sets (manifest)
      runs/<id>.json         metadata of run set <id>: spec, label, versions, machine, timings
      runs/<id>.parquet      its trace: one row per checkpoint per repetition

``<id>`` is :func:`run_set_id`, a content hash of the resolved ``RunSetSpec``, so the
same run set always lands on the same file and a rerun of the same config skips it.
Every file is written under a temporary name in the same folder and moved into place
with :func:`os.replace` (atomic on POSIX and Windows), and the Parquet file comes
last: its presence alone marks a finished run set. A sweep killed at any moment
therefore leaves only whole files, plus at worst some temporaries (hidden
``.*.tmp`` names) that :func:`clean_stale` removes before the next sweep. Only one
sweep at a time may write into a results folder.

The Parquet file also carries the JSON record in its schema metadata (key
``oltr``), so a trace is self-describing even without its sidecar. The sidecar
records the trace file's size and SHA-256 (``trace_file``); a trace whose bytes
no longer match (truncated, overwritten, a damaged footer) does not count as
finished: a sweep recomputes it, and reading it raises a
:class:`~oltr.errors.StorageError` naming the file. So does a trace whose sidecar is
damaged (not JSON, not a record, a broken checksum entry): the checksum that vouched
for the trace is lost, and a recomputed run set is the same bit for bit, whereas a
sidecar rewritten from the trace would vouch for bytes nobody checked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from oltr.errors import StorageError

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST",
    "clean_stale",
    "damaged_run_sets",
    "prepare_dir",
    "finished_run_sets",
    "load_metadata",
    "load_results",
    "read_manifest",
    "run_set_id",
    "runs_dir",
    "write_json_atomic",
    "write_manifest",
    "write_run_set",
]

#: Bumped when the meaning of a stored trace changes, so old ids no longer match.
FORMAT_VERSION = 1
MANIFEST = "experiment.json"
_META_KEY = b"oltr"


def run_set_id(spec: Any) -> str:
    """Content hash (16 hex digits) of a run-set spec: its files' name.

    The hash covers every field of the dataclass (environment, feedback, learner
    and their parameters, repetitions, root seed, horizon, measures, checkpoints)
    in canonical JSON, so equal specs share an id in every process and run.
    Optional fields (default None) are left out while they are None, so adding
    such a field (e.g. ``heldout``) keeps the ids of the specs that do not use it.
    """
    fields = dataclasses.asdict(spec)
    for f in dataclasses.fields(spec):
        if f.default is None and fields[f.name] is None:
            del fields[f.name]
    payload = {"format": FORMAT_VERSION, "spec": _jsonable(fields)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def runs_dir(results_dir: str | Path) -> Path:
    """The folder holding the run-set files of a results folder."""
    return Path(results_dir) / "runs"


def finished_run_sets(results_dir: str | Path) -> set[str]:
    """Ids of the run sets whose trace has been written and is intact."""
    return set(_traces(results_dir)) - set(damaged_run_sets(results_dir))


def damaged_run_sets(results_dir: str | Path) -> dict[str, str]:
    """Run sets whose trace file exists but is not what was written: id -> what is wrong."""
    return {rid: problem for rid, path in _traces(results_dir).items() if (problem := _check(path))}


def _traces(results_dir: str | Path) -> dict[str, Path]:
    folder = runs_dir(results_dir)
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in folder.glob("*.parquet") if not p.name.startswith(".")}


def _digest(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _check(trace: Path) -> str | None:
    """None when ``trace`` is intact, else why not (size, checksum or footer)."""
    sidecar = trace.with_suffix(".json")
    expected = None
    if sidecar.exists():  # a trace is self-describing: without a sidecar its footer is checked
        record, why = _read_record(sidecar)
        if why is not None:
            # The checksum that vouches for the trace is lost: recompute rather than trust it.
            return f"its record {sidecar.name} is damaged ({why}), so the trace cannot be checked"
        expected = record.get("trace_file")
    if expected is not None:
        size = trace.stat().st_size
        if size != expected["size"]:
            return f"{size} bytes, {expected['size']} were written"
        if _digest(trace) != expected["sha256"]:
            return "its SHA-256 differs from the one recorded when it was written"
        return None
    try:  # written before checksums were recorded: the Parquet footer must at least read
        pq.read_metadata(trace)
    except (OSError, pa.ArrowException) as exc:
        return f"unreadable Parquet ({exc})"
    return None


def _read_record(sidecar: Path) -> tuple[dict[str, Any], str | None]:
    """A run set's JSON record, or why it cannot be read (its checksum entry included)."""
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return {}, f"not valid JSON at line {exc.lineno}: {exc.msg}"
    except (OSError, UnicodeDecodeError) as exc:
        return {}, str(exc)
    if not isinstance(record, dict):
        return {}, f"a JSON {type(record).__name__}, not an object"
    entry = record.get("trace_file")
    if entry is not None and not (
        isinstance(entry, dict)
        and isinstance(entry.get("size"), int)
        and isinstance(entry.get("sha256"), str)
    ):
        return {}, "its trace_file entry is not a size and a SHA-256"
    return record, None


def clean_stale(results_dir: str | Path) -> list[Path]:
    """Delete temporaries left by an interrupted sweep; returns what was removed."""
    removed = []
    for folder in (Path(results_dir), runs_dir(results_dir)):
        if folder.is_dir():
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
    return removed


def prepare_dir(folder: str | Path, *, what: str = "results folder") -> Path:
    """Create ``folder`` if needed and prove it writable, before any work is done.

    Raises
    ------
    StorageError
        Naming the folder, what stands in the way (a file where a folder should
        be, no permission, a read-only or full disk) and what to do.
    """
    path = Path(folder)
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise StorageError(
            f"{path}: cannot use it as the {what}: {blocker} is a file, not a folder; "
            "move it or choose another folder"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".oltr-write-probe.{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StorageError(
            f"{path}: the {what} is not writable ({exc.strerror or exc}); "
            "check its permissions and free space, or choose another folder"
        ) from None
    return path


def write_json_atomic(path: str | Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` as indented JSON to ``path`` through a temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_jsonable(record), indent=2, sort_keys=False, allow_nan=True) + "\n"
    _atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_run_set(
    results_dir: str | Path, run_set: str, trace: pd.DataFrame, record: Mapping[str, Any]
) -> Path:
    """Store one finished run set: the JSON record first, then the Parquet trace.

    Parameters
    ----------
    results_dir
        The results folder (created if needed).
    run_set
        Its id, :func:`run_set_id` of its spec.
    trace
        The runner's trace (columns ``rep``, ``t`` and the measure columns).
    record
        JSON-serialisable metadata; must hold ``label`` and ``params``.

    Returns
    -------
    Path
        The Parquet file written.
    """
    for key in ("label", "params"):
        if key not in record:
            raise ValueError(f"record must hold {key!r}; it has {sorted(record)}")
    folder = runs_dir(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(trace, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META_KEY] = json.dumps(_jsonable(record)).encode()
    table = table.replace_schema_metadata(meta)
    target = folder / f"{run_set}.parquet"

    def write_trace(tmp: Path) -> None:
        pq.write_table(table, tmp)
        # The sidecar (with the trace's size and checksum) lands before the trace does.
        sidecar = {**record, "trace_file": {"size": tmp.stat().st_size, "sha256": _digest(tmp)}}
        write_json_atomic(folder / f"{run_set}.json", sidecar)

    _atomic_write(target, write_trace)
    return target


def write_manifest(results_dir: str | Path, manifest: Mapping[str, Any]) -> None:
    """Record which config (and so which run sets) a results folder holds."""
    Path(results_dir).mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(results_dir) / MANIFEST, manifest)


def read_manifest(results_dir: str | Path) -> dict[str, Any] | None:
    """The manifest of a results folder, or None when it has none."""
    path = Path(results_dir) / MANIFEST
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None


def load_metadata(
    results_dir: str | Path, *, include_all: bool = False
) -> dict[str, dict[str, Any]]:
    """The JSON records of the finished run sets, by id (selection as in :func:`load_results`)."""
    folder = runs_dir(results_dir)
    ids = sorted(_selected(results_dir, include_all))
    damaged = {rid: why for rid, why in damaged_run_sets(results_dir).items() if rid in ids}
    if damaged:
        rid, why = next(iter(sorted(damaged.items())))
        raise StorageError(
            f"{folder / (rid + '.parquet')}: damaged trace ({why})"
            + (f" and {len(damaged) - 1} more" if len(damaged) > 1 else "")
            + "; run the experiment again (`oltr run`) to recompute it"
        )
    out = {}
    for rid in ids:
        schema = pq.read_schema(folder / f"{rid}.parquet")
        raw = (schema.metadata or {}).get(_META_KEY)
        if raw is None:
            raise ValueError(
                f"{folder / (rid + '.parquet')}: not an oltr trace (no 'oltr' metadata)"
            )
        out[rid] = json.loads(raw)
    return out


def load_results(results_dir: str | Path, *, include_all: bool = False) -> pd.DataFrame:
    """Every finished trace of a results folder as one tidy DataFrame.

    Columns: ``run_set`` (id), ``learner`` (label), ``params`` (the learner's
    parameter setting as a JSON string), then the trace columns (``rep``, ``t``,
    and per measure ``M``, ``M:cum``, ``M:avg``, ``M:regret``), sorted by
    learner, rep and t.

    When the folder has a manifest (it does when a sweep wrote it), only the run
    sets of the config last run there are read, so stale run sets of an edited
    config do not mix in; ``include_all=True`` reads every finished run set.

    Raises
    ------
    ValueError
        When the folder holds no finished run set.
    """
    folder = runs_dir(results_dir)
    ids = sorted(_selected(results_dir, include_all))
    if not ids:
        raise ValueError(f"{results_dir}: no finished run sets (no runs/*.parquet files)")
    metadata = load_metadata(results_dir, include_all=include_all)
    frames = []
    for rid in ids:
        trace = pq.read_table(folder / f"{rid}.parquet").to_pandas()
        record = metadata[rid]
        trace.insert(0, "params", json.dumps(record["params"], sort_keys=True))
        trace.insert(0, "learner", record["label"])
        trace.insert(0, "run_set", rid)
        frames.append(trace)
    df = pd.concat(frames, ignore_index=True)
    ordered: pd.DataFrame = df.sort_values(
        ["learner", "rep", "t"], kind="stable", ignore_index=True
    )
    return ordered


# ----------------------------------------------------------------------------- internals


def _selected(results_dir: str | Path, include_all: bool) -> set[str]:
    done = set(_traces(results_dir))
    if include_all:
        return done
    manifest = read_manifest(results_dir)
    if manifest is None:
        return done
    return done & {entry["run_set"] for entry in manifest.get("run_sets", [])}


def _atomic_write(path: Path, write: Any) -> None:
    # A hidden temporary in the same folder: os.replace is atomic only within a filesystem.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:  # durable before it becomes visible
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _jsonable(value: Any) -> Any:
    """Plain JSON types for dataclass/TOML/numpy values (tuples become lists)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    if hasattr(value, "isoformat"):  # TOML dates and times
        return value.isoformat()
    return value
