"""Export a served ranker's impressions as a click log and the LETOR file of their features.

``oltr logs export STORE --ranker NAME --out LOG --data-out FILE`` turns what
``oltr serve`` logged into the pair of files of the click-log schema
(:mod:`oltr.logs.io`):

* the **data file** (LETOR/SVMlight text) holds one query per exported
  impression: its ``qid`` is the impression's round ``t`` (1, 2, … per ranker),
  its documents are the impression's candidates in the order the request sent
  them, with the features the ranker saw, and grade 0 (the service never learns
  grades);
* the **click log** holds one row per exported impression: ``qid`` the round,
  ``docs`` the shown list as indices into that query's candidates, ``clicks``
  from the feedback, ``logger`` the ranker's name, and ``propensity`` when the
  ranker logged the probability of the shown list (RTop-kF's exploration,
  :func:`oltr.serve.protocol.exploration_propensities`).

How feedback becomes clicks, by what the feedback request carried:

* ``clicks`` (duels: clicked positions of the interleaved list; click models,
  feedback ``clicks``: positions of the result page, the first ``min(k, m)`` of
  the order) → a click at each of those positions, and the row shows that list
  or page only (the user saw nothing below the page);
* ``chosen`` (choice: chosen item indices) → a click at the position of each
  chosen item;
* ``labels`` (``top-k`` or ``full``: relevance grades of the top shown) are
  not clicks and are refused, naming the kind, unless ``labels_as_clicks`` is
  set: then a grade > 0 is a click, and the row shows only the positions the
  labels reveal (the positions below them are unknown, not unclicked), with the
  logged probability of that prefix as its propensity;
* no feedback content (``bandit``, ``none``) is refused, naming the kind.

Only impressions with feedback are exported; pending and expired ones are
counted and left out (nothing says whether they were clicked). Rankers of a
fixed item set (no features) are refused: the data file needs features.

The store is read without its writer lock, through a read-only SQLite
connection, in one read transaction (one consistent snapshot of impressions and
events): a live service keeps running beside the export, unblocked (WAL
readers do not block the writer). The features are held in memory while the
data file is written.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from oltr.data.dataset import LetorDataset
from oltr.data.letor import write_letor
from oltr.errors import InputError
from oltr.logs.io import log_format, write_log
from oltr.logs.schema import ClickLog
from oltr.serve.store import Impression, impression_from_row
from oltr.serve.storecheck import (
    StoreDamagedError,
    StoreOpenError,
    check_store_path,
    read_only_uri,
    store_problems,
)
from oltr.serve.storesql import SELECT_IMPRESSION

__all__ = ["ExportSummary", "export_log", "impression_clicks"]


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote: impressions exported, left out (pending, expired), propensities."""

    ranker: str
    impressions: int
    pending: int
    expired: int
    n_features: int
    propensities: bool


def impression_clicks(
    imp: Impression,
    payload: dict[str, Any],
    feedback: str,
    *,
    page: int | None = None,
    labels_as_clicks: bool = False,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], float | None]:
    """``(docs, clicks, propensity)`` of one impression from its feedback ``payload``.

    ``feedback`` is the ranker's feedback kind (named in errors); ``page`` the
    length of a click model's result page (the first ``min(k, m)`` of the order;
    None for the other kinds, whose shown list is the page). See the module
    docstring for the rules; raises :class:`InputError` for feedback that holds
    no clicks.
    """
    shown = np.asarray(imp.shown, dtype=np.int64)
    prefix = list(imp.propensities.get("prefix", []))
    if "clicks" in payload:
        docs = shown if page is None else shown[:page]
        clicks = np.zeros(docs.size, dtype=np.int8)
        clicks[np.asarray(payload["clicks"], dtype=np.int64)] = 1
    elif "chosen" in payload:
        docs = shown
        clicks = np.isin(shown, np.asarray(payload["chosen"], dtype=np.int64)).astype(np.int8)
    elif "labels" in payload and labels_as_clicks:
        labels = np.asarray(payload["labels"], dtype=np.float64)
        docs = shown[: labels.size]
        clicks = (labels[: docs.size] > 0).astype(np.int8)
    elif "labels" in payload:
        raise InputError(
            f"ranker {imp.ranker!r} has feedback kind {feedback!r}: its feedback is relevance "
            "labels of the top shown, not clicks; pass labels_as_clicks (--labels-as-clicks) to "
            "count a label > 0 as a click on the positions the labels reveal"
        )
    else:
        raise InputError(
            f"ranker {imp.ranker!r} has feedback kind {feedback!r}, whose feedback holds no "
            "clicks (neither clicked positions nor chosen items): there is no click log to export"
        )
    propensity = float(prefix[docs.size - 1]) if len(prefix) >= docs.size else None
    return docs, clicks, propensity


def _read_store(
    path: Path, ranker: str
) -> tuple[dict[str, Any], list[Impression], dict[str, dict[str, Any]]]:
    """The ranker's definition, impressions (by round) and feedback payloads, in one snapshot."""
    if not check_store_path(path):
        raise StoreOpenError(f"store {path} does not exist")
    problems = store_problems(path)
    if problems:
        raise StoreDamagedError(f"store {path} cannot be read: {problems[0]}")
    db = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None)
    db.row_factory = sqlite3.Row
    try:
        db.execute("BEGIN")  # one snapshot for every read below (WAL: the writer goes on)
        names = {r["name"]: r["definition"] for r in db.execute("SELECT * FROM rankers")}
        if ranker not in names:
            raise InputError(f"store {path} has no ranker {ranker!r}; it has {sorted(names)}")
        rows = db.execute(f"{SELECT_IMPRESSION} ORDER BY i.t", (ranker,))
        impressions = [impression_from_row(row) for row in rows]
        events = db.execute(
            "SELECT impression, payload FROM events WHERE ranker = ? AND kind = 'feedback'",
            (ranker,),
        )
        feedback = {r["impression"]: json.loads(r["payload"]) for r in events}
        db.execute("COMMIT")
    finally:
        db.close()
    return json.loads(names[ranker]), impressions, feedback


def _page_k(definition: dict[str, Any]) -> int | None:
    """``k`` of a click model's result page (its first ``min(k, m)`` items), else None."""
    from oltr.build import make_feedback

    model = make_feedback(definition["feedback"], definition.get("feedback_params") or {})
    k = getattr(model, "k", None)
    return int(k) if model.provides.kind == "clicks" and k is not None else None


def export_log(
    store: str | os.PathLike[str],
    ranker: str,
    out: str | os.PathLike[str],
    data_out: str | os.PathLike[str],
    *,
    labels_as_clicks: bool = False,
) -> ExportSummary:
    """Write ranker ``ranker``'s impressions with feedback as the click log ``out`` and the
    LETOR file ``data_out`` (see the module docstring); both are written atomically.

    Raises
    ------
    InputError
        An unknown ranker, a ranker without features or whose feedback holds no
        clicks, no impression with feedback yet, or a log name of an unknown format.
    StoreDamagedError, StoreOpenError
        A store that cannot be read.
    """
    log_format(out)  # refuse an unknown log format before any work
    definition, impressions, feedback = _read_store(Path(store), ranker)
    kind = str(definition.get("feedback", "?"))
    if definition.get("n_features") is None:
        raise InputError(
            f"ranker {ranker!r} ranks a fixed set of {definition.get('n_items')} items without "
            "features: a click log's data file needs features"
        )
    page_k = _page_k(definition)
    qids, lists, clicks, props, feats = [], [], [], [], []
    status = {"pending": 0, "expired": 0}
    for imp in impressions:
        payload = feedback.get(imp.id)
        if payload is None:
            status[imp.status if imp.status in status else "pending"] += 1
            continue
        page = None if page_k is None else min(page_k, imp.n_items)
        docs, c, p = impression_clicks(
            imp, payload, kind, page=page, labels_as_clicks=labels_as_clicks
        )
        assert imp.features is not None
        qids.append(imp.t)
        lists.append(docs)
        clicks.append(c)
        props.append(p)
        feats.append(imp.features)
    if not qids:
        raise InputError(
            f"ranker {ranker!r} has no impression with feedback yet "
            f"({status['pending']} pending, {status['expired']} expired): nothing to export"
        )
    with_props = all(p is not None for p in props)
    log = ClickLog.from_rows(
        [(str(q), d, c) for q, d, c in zip(qids, lists, clicks, strict=True)],
        loggers=[ranker] * len(qids),
        propensities=np.array(props, dtype=np.float64) if with_props else None,
        source=str(out),
    )
    lengths = [f.shape[0] for f in feats]
    dataset = LetorDataset(
        features=np.concatenate(feats),
        relevance=np.zeros(sum(lengths), dtype=np.int64),
        qids=np.asarray(qids, dtype=np.int64),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        source=str(data_out),
        check_values=False,  # the service checked every feature when it ranked
    )
    write_letor(dataset, data_out)
    write_log(log, out)
    return ExportSummary(
        ranker=ranker,
        impressions=len(qids),
        pending=status["pending"],
        expired=status["expired"],
        n_features=int(dataset.n_features),
        propensities=with_props,
    )
