"""Click logs on disk: Parquet or JSON Lines (plain or gzip), read whole or streamed, written
atomically.

The format is the schema of :mod:`oltr.logs.schema`, version 1, one impression
per row:

=============  ==============================================  =====================================
column         Parquet type                                    JSON Lines value
=============  ==============================================  =====================================
``qid``        string (or dictionary of strings)               string (``"7"``, not ``7``)
``docs``       list of integers                                array of integers
``clicks``     list of integers (or booleans), each 0 or 1     array of 0 and 1
``logger``     string, optional                                string, optional
``propensity`` float (or integer), optional, in (0, 1]         number, optional
=============  ==============================================  =====================================

The format is chosen by the name: ``.parquet``, ``.jsonl`` or ``.jsonl.gz``.
A Parquet file carries the key-value metadata ``oltr.click_log.version = "1"``
(a file without it is read as version 1); a JSON Lines row may carry
``"version": 1``. Another version is refused.

Choices, each enforced by the reader:

* ``qid`` is a string in both formats; a JSON integer is refused rather than
  converted, so ``"007"`` and ``7`` never meet by accident;
* a column outside the schema is refused (a misspelt ``propensities`` would
  otherwise be dropped without a word); only pandas' index columns
  (``__index_level_0__``, …) are ignored in Parquet;
* an optional column is all or nothing: in JSON Lines the first row decides
  whether the log has it, and every row must then agree; ``null`` is not a value;
* blank lines of a JSON Lines file are skipped (they are not impressions).

Every problem raises :class:`~oltr.logs.schema.LogFormatError` naming the file,
the row (the 0-based impression number; None when the problem is a whole
column, such as a missing column or a Parquet column of the wrong type) and
the column; in JSON Lines the message also gives the 1-based line number.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from oltr.errors import InputError
from oltr.logs.jsonl import checked_chunk, iter_jsonl, log_chunks, write_jsonl
from oltr.logs.schema import COLUMNS, SCHEMA_VERSION, ClickLog, LogFormatError

__all__ = ["VERSION_KEY", "concat_logs", "iter_log", "log_format", "read_log", "write_log"]

#: The Parquet key-value metadata key holding the schema version.
VERSION_KEY = "oltr.click_log.version"
_REQUIRED = COLUMNS[:3]
_PANDAS_INDEX = "__index_level_"


def log_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"`` or ``"jsonl"`` by the file name; :class:`InputError` for another name."""
    name = Path(path).name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".jsonl", ".jsonl.gz")):
        return "jsonl"
    raise InputError(
        f"{path}: a click log's name must end in .parquet, .jsonl or .jsonl.gz (the format)"
    )


# -- reading --------------------------------------------------------------------------------


def read_log(path: str | os.PathLike[str]) -> ClickLog:
    """The whole click log at ``path`` (see the module docstring for the format).

    Raises
    ------
    LogFormatError
        Naming the file, row and column of the first problem.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "log.jsonl").write_text('{"qid": "7", "docs": [2, 0], "clicks": [0, 1]}\\n')
    >>> log = read_log(folder / "log.jsonl")
    >>> log.n_impressions, log.docs.tolist(), log.clicks.tolist()
    (1, [2, 0], [0, 1])
    """
    return concat_logs(list(iter_log(path, batch_rows=1 << 20)))


def iter_log(path: str | os.PathLike[str], *, batch_rows: int = 100_000) -> Iterator[ClickLog]:
    """The click log at ``path`` in chunks of at most ``batch_rows`` impressions, in order.

    A Parquet file is read one record batch at a time and a JSON Lines file one
    line at a time, so a log larger than memory is never held whole. A problem
    is raised when the chunk holding it is read (the chunks before it have been
    yielded); row numbers count from the start of the file.
    """
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InputError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
    kind = log_format(path)
    source = str(path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", source)
    if os.path.getsize(path) == 0:
        raise LogFormatError("the file is empty (0 bytes)", source=source)
    if kind == "parquet":
        yield from _iter_parquet(Path(path), source, batch_rows)
    else:
        yield from iter_jsonl(Path(path), source, batch_rows)


def concat_logs(logs: Iterable[ClickLog]) -> ClickLog:
    """One log holding the impressions of ``logs`` in order (the same optional columns)."""
    parts = list(logs)
    if not parts:
        raise LogFormatError("the log has no impression", column="qid")
    if len(parts) == 1:
        return parts[0]
    for name in ("loggers", "propensities"):
        if len({getattr(p, name) is None for p in parts}) > 1:
            raise InputError(f"logs to join must all have or all lack {name}")
    shifts = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
    offsets = np.concatenate(
        [[0]] + [p.offsets[1:] + s for p, s in zip(parts, shifts, strict=True)]
    )

    def joined(name: str) -> Any:
        values = [getattr(p, name) for p in parts]
        return None if values[0] is None else np.concatenate(values)

    return ClickLog(
        qids=joined("qids"),
        offsets=offsets,
        docs=joined("docs"),
        clicks=joined("clicks"),
        loggers=joined("loggers"),
        propensities=joined("propensities"),
        source=parts[0].source,
    )


# -- Parquet -------------------------------------------------------------------------------


def _parquet_columns(schema: Any, source: str) -> list[str]:
    """The schema columns present; raise for a missing, unknown or mistyped one."""
    import pyarrow as pa

    metadata = schema.metadata or {}
    version = metadata.get(VERSION_KEY.encode())
    if version is not None and version != str(SCHEMA_VERSION).encode():
        raise LogFormatError(
            f"schema version {version.decode(errors='replace')!r} (metadata {VERSION_KEY}), "
            f"this oltr reads version {SCHEMA_VERSION}",
            source=source,
        )
    names = [n for n in schema.names if not n.startswith(_PANDAS_INDEX)]
    for name in names:
        if name not in COLUMNS:
            raise LogFormatError(
                f"unknown column (the schema has {', '.join(COLUMNS)})", column=name, source=source
            )
    for name in _REQUIRED:
        if name not in names:
            raise LogFormatError("a required column is missing", column=name, source=source)
    t = pa.types

    def strings(typ: Any) -> bool:
        if t.is_dictionary(typ):
            return strings(typ.value_type)
        return bool(t.is_string(typ) or t.is_large_string(typ))

    def int_lists(typ: Any, allow_bool: bool) -> bool:
        if not (t.is_list(typ) or t.is_large_list(typ) or t.is_fixed_size_list(typ)):
            return False
        value = typ.value_type
        return bool(t.is_integer(value) or (allow_bool and t.is_boolean(value)))

    checks: dict[str, tuple[Callable[[Any], bool], str]] = {
        "qid": (strings, "string"),
        "logger": (strings, "string"),
        "docs": (lambda typ: int_lists(typ, False), "list of integers"),
        "clicks": (lambda typ: int_lists(typ, True), "list of integers (0/1) or booleans"),
        "propensity": (lambda typ: t.is_floating(typ) or t.is_integer(typ), "float"),
    }
    for name in names:
        ok, want = checks[name]
        typ = schema.field(name).type
        if not ok(typ):
            msg = f"the column has type {typ}; the schema wants {want}"
            raise LogFormatError(msg, column=name, source=source)
    return [name for name in COLUMNS if name in names]


def _first_null(array: Any) -> int | None:
    if array.null_count == 0:
        return None
    import pyarrow.compute as pc

    return int(pc.index(pc.is_null(array), True).as_py())


def _batch_columns(batch: Any, start: int, source: str) -> tuple[dict[str, Any], Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    def fail(message: str, i: int, column: str) -> LogFormatError:
        return LogFormatError(message, row=start + i, column=column, source=source)

    out: dict[str, Any] = {}
    list_offsets: dict[str, Any] = {}
    for name in batch.schema.names:
        if name.startswith(_PANDAS_INDEX):
            continue
        array = batch.column(name)
        null = _first_null(array)
        if null is not None:
            raise fail("the value is null", null, name)
        if name in ("qid", "logger"):
            out[name] = np.asarray(
                pc.cast(array, pa.string()).to_numpy(zero_copy_only=False), dtype=str
            )
        elif name == "propensity":
            out[name] = np.asarray(pc.cast(array, pa.float64()).to_numpy(), dtype=np.float64)
        else:
            values = array.flatten()
            if values.null_count:
                parents = pc.list_parent_indices(array)
                i = int(parents[int(pc.index(pc.is_null(values), True).as_py())].as_py())
                raise fail(f"{name} holds a null entry", i, name)
            offsets = np.asarray(pc.list_value_length(array).to_numpy(), dtype=np.int64)
            list_offsets[name] = offsets
            try:
                values = pc.cast(values, pa.int64())
            except pa.ArrowInvalid:
                raise LogFormatError(
                    f"{name} holds an integer beyond 64 bits", column=name, source=source
                ) from None
            out[name] = np.asarray(values.to_numpy(), dtype=np.int64)
    lengths = list_offsets["docs"]
    differ = lengths != list_offsets["clicks"]
    if differ.any():
        i = int(np.flatnonzero(differ)[0])
        n_clicks, n_docs = int(list_offsets["clicks"][i]), int(lengths[i])
        msg = f"clicks has {n_clicks} entries and docs {n_docs}: one click per shown doc"
        raise fail(msg, i, "clicks")
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return out, offsets


def _iter_parquet(path: Path, source: str, batch_rows: int) -> Iterator[ClickLog]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
            raise
        raise LogFormatError(f"not a Parquet file ({exc})", source=source) from None
    columns = _parquet_columns(pf.schema_arrow, source)
    if pf.metadata.num_rows == 0:
        raise LogFormatError("the file holds no impression", source=source)
    start = 0
    try:
        batches = pf.iter_batches(batch_size=batch_rows, columns=columns)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            values, offsets = _batch_columns(batch, start, source)
            yield checked_chunk(values, offsets, start, source)
            start += batch.num_rows
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise LogFormatError(f"cannot read row {start} onwards: {exc}", source=source) from None


# -- writing -------------------------------------------------------------------------------


def write_log(
    log: ClickLog, path: str | os.PathLike[str], *, row_group_rows: int = 100_000
) -> None:
    """Write ``log`` at ``path`` in the format its name says (``.parquet``, ``.jsonl[.gz]``).

    Written to a temporary name in the same folder and renamed into place, so a
    reader never sees half a file and a failed write leaves ``path`` as it was.
    A Parquet file gets row groups of ``row_group_rows`` impressions (the unit
    :func:`iter_log` streams) and the metadata ``oltr.click_log.version``;
    every JSON Lines row carries ``"version": 1``. Gzip output has a fixed
    header, so the bytes depend only on the log.
    """
    if (
        isinstance(row_group_rows, bool)
        or not isinstance(row_group_rows, int)
        or row_group_rows < 1
    ):
        raise InputError(f"row_group_rows must be an integer >= 1, got {row_group_rows!r}")
    kind = log_format(path)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        if kind == "parquet":
            _write_parquet(log, tmp, row_group_rows)
        else:
            write_jsonl(log, tmp, gz=path.name.lower().endswith(".gz"))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_parquet(log: ClickLog, tmp: Path, row_group_rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = [
        pa.field("qid", pa.string(), nullable=False),
        pa.field("docs", pa.list_(pa.int64()), nullable=False),
        pa.field("clicks", pa.list_(pa.int8()), nullable=False),
    ]
    if log.loggers is not None:
        fields.append(pa.field("logger", pa.string(), nullable=False))
    if log.propensities is not None:
        fields.append(pa.field("propensity", pa.float64(), nullable=False))
    schema = pa.schema(fields, metadata={VERSION_KEY: str(SCHEMA_VERSION)})
    with open(tmp, "xb") as raw:
        with pq.ParquetWriter(raw, schema) as writer:
            for part in log_chunks(log, row_group_rows):
                table = pa.Table.from_arrays(_arrow_arrays(part), schema=schema)
                writer.write_table(table, row_group_size=row_group_rows)
        raw.flush()
        os.fsync(raw.fileno())


def _arrow_arrays(part: ClickLog) -> list[Any]:
    import pyarrow as pa

    offsets = pa.array(part.offsets.astype(np.int32))
    arrays = [
        pa.array(part.qids.tolist(), pa.string()),
        pa.ListArray.from_arrays(offsets, pa.array(part.docs, pa.int64())),
        pa.ListArray.from_arrays(offsets, pa.array(part.clicks, pa.int8())),
    ]
    if part.loggers is not None:
        arrays.append(pa.array(part.loggers.tolist(), pa.string()))
    if part.propensities is not None:
        arrays.append(pa.array(part.propensities, pa.float64()))
    return arrays
