"""A candidate beside a production ranker: shadow or interleaved comparison, guarded rollout.

A :class:`LiveComparison` hangs on the production ranker P (``Ranker.candidate``)
and runs inside P's requests, under P's lock (then the candidate's: a ranker
with a candidate is nobody's candidate, and a candidate has none, so the two
locks are always taken in the same order):

* ``rank``: P ranks as always (its learner's stream moves as without a
  comparison). The candidate C ranks the same features through its own
  ranker, so its list is logged in its own log (an impression with its
  ``rank`` event, submitted before P's, so that P's commit implies C's) —
  in shadow mode on every request, in interleaved mode on the compared ones
  and, after a promotion, on every request. Which requests are compared is
  drawn from ``child_rng(P.seed, "comparison", id, "share", t)`` and the
  team-draft coins from ``child_rng(P.seed, "comparison", id, "interleave",
  t)`` (``id``: the comparison's row in the store, ``t``: P's round), so a
  rerun gives the same pages. The page is P's list, C's list (promoted) or
  the team-draft interleaving of the two over the feedback page (then the
  rest of the serving ranker's list); the impression's ``extra["comparison"]``
  records which, C's impression and page, and the teams.
* ``feedback``: each ranker learns only from pages it produced: P from its
  own, C from its own after a promotion (the feedback is passed on to C's
  impression); an interleaved page teaches neither (its clicks are a duel,
  not feedback on either list), and in shadow mode C never learns (its lists
  were not shown). The outcome of an interleaved page is counted, the rule
  of :func:`oltr.serve.comparison.decide` is checked, and a decision is
  written right after P's feedback event (:meth:`Store.submit_write`, P's
  write guard), before the answer.

The state is a function of the store: the ``decisions`` table (``candidate``
with the configuration, or a removal; ``promote``; ``rollback``; each with
the seq of P's last event before it) and P's feedback events on impressions
of the comparison, folded in order by :meth:`LiveComparison.restore`. After a
crash between a feedback and its decision, the fold checks the rule once more
and writes the decision then.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oltr.clicks.interleaving import TeamDraftInterleaving, team_draft_interleave
from oltr.random import child_rng
from oltr.serve.clickfeedback import page_length
from oltr.serve.comparison import (
    COMPARISON_KEY,
    CandidateConfig,
    Tally,
    check_config,
    clicked_positions,
    decide,
    interleaved_summary,
    shadow_summary,
)
from oltr.serve.protocol import RequestError, feedback_depth
from oltr.serve.rankers import Ranker, Rankers
from oltr.serve.storecheck import read_only_uri
from oltr.types import Context

__all__ = ["LiveComparison", "attach", "detach", "history", "manual", "restore_comparisons"]

#: Feedback kinds a comparison can read clicks from.
_KINDS = ("clicks", "topk")
_INSERT = (
    "INSERT INTO decisions (ranker, kind, event_seq, payload) VALUES "
    "(?, ?, (SELECT COALESCE(MAX(seq), 0) FROM events WHERE ranker = ?), ?)"
)


def _page(ranker: Ranker, m: int) -> int:
    model = ranker.model
    return page_length(model, m) if model.provides.kind == "clicks" else feedback_depth(model, m)


def _read(path: str, sql: str, args: tuple[Any, ...]) -> list[sqlite3.Row]:
    with closing(sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None)) as db:
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout=10000")
        return list(db.execute(sql, args))


def _decisions(path: str, ranker: str) -> list[tuple[int, str, int, dict[str, Any]]]:
    rows = _read(
        path,
        "SELECT rowid, kind, event_seq, payload FROM decisions WHERE ranker = ? ORDER BY rowid",
        (ranker,),
    )
    return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]


@dataclass
class LiveComparison:
    """The comparison of ``production`` with the candidate of ``config`` (module docstring)."""

    rankers: Rankers
    production: Ranker
    config: CandidateConfig
    id: int
    phase: str = "comparing"  # "comparing" -> "promoted" -> "rolled-back"
    tally: Tally = field(default_factory=Tally)

    # -- inside P's requests ---------------------------------------------------------------

    def candidate(self) -> Ranker | None:
        """The candidate ranker, or None when it was deleted."""
        try:
            return self.rankers.get(self.config.ranker)
        except RequestError:
            return None

    def on_rank(
        self, ctx: Context, shown: Any, props: dict[str, Any], extra: dict[str, Any]
    ) -> tuple[Any, dict[str, Any]]:
        """The page to show and its propensities; records the comparison in ``extra``."""
        cand = self.candidate()
        if cand is None or self.phase == "rolled-back":
            return shown, props
        seed, t, cfg = self.production.definition.seed, ctx.t, self.config
        interleaved = cfg.mode == "interleaved"
        compared = (
            interleaved and child_rng(seed, "comparison", self.id, "share", t).random() < cfg.share
        )
        if interleaved and not compared and self.phase != "promoted":
            return shown, props  # the candidate does not rank: nothing of it would be used
        features = None if ctx.features is None else ctx.features.tolist()
        try:
            with cand.lock:
                answer, _ = cand.rank_locked(features)  # its write is queued before P's
        except Exception:  # the candidate failed (and rebuilt itself): P's list is shown
            return shown, props
        rec: dict[str, Any] = {
            "id": self.id,
            "candidate": cand.name,
            "impression": answer["impression"],
        }
        n = _page(self.production, ctx.n_items)
        mine = np.asarray(shown, dtype=np.intp)
        theirs = np.asarray(answer["order"], dtype=np.intp)
        if not interleaved:
            rec.update(shown="production", page=theirs[:n].tolist())
        elif compared:
            rng = child_rng(seed, "comparison", self.id, "interleave", t)
            il = team_draft_interleave(mine, theirs, k=n, rng=rng)
            serving = theirs if self.phase == "promoted" else mine
            rest = serving[~np.isin(serving, il.shown)]
            shown, props = np.concatenate([il.shown, rest]), {}
            rec.update(shown="interleaved", team=il.team.tolist())
        else:  # promoted: the candidate's own list, with its own propensities
            shown, props = theirs, answer["propensities"]
            rec.update(shown="candidate")
        extra[COMPARISON_KEY] = rec
        return shown, props

    def on_feedback(self, imp: Any, body: dict[str, Any], ttl: float, submit: Any) -> Any:
        """Count the feedback of ``imp``, pass it on to the candidate when its page was shown,
        run ``submit`` (P's feedback write) and write any decision; the last write's future."""
        rec = imp.extra.get(COMPARISON_KEY)
        if rec is None or rec.get("id") != self.id:
            return submit()
        if rec["shown"] == "candidate":
            cand = self.candidate()
            if cand is not None:
                try:
                    with cand.lock:
                        cand.feedback_locked(rec["impression"], body, ttl)
                except Exception:  # its impression expired or is gone, or it failed (and
                    pass  # rebuilt itself from its log): it does not learn from this page
        self._count(rec, imp, body)
        done = submit()
        later = self._check()
        return later if later is not None else done

    def _count(self, rec: dict[str, Any], imp: Any, body: dict[str, Any]) -> None:
        if rec["shown"] == "interleaved":
            team = np.asarray(rec["team"], dtype=np.int8)
            page = np.asarray(imp.shown[: team.size], dtype=np.intp)
            clicks = clicked_positions(body, team.size)
            self.tally.add(int(TeamDraftInterleaving(page, team).outcome(clicks)))
        elif rec["shown"] == "production" and self.config.mode == "shadow":
            top: list[int] = [int(i) for i in imp.shown[: len(rec["page"])]]
            hits: list[bool] = clicked_positions(body, len(top)).tolist()
            prefix = [float(p) for p in imp.propensities.get("prefix", [])]
            self.tally.agree_top += int(top[0] == rec["page"][0])
            self.tally.shadow.append((hits, top, prefix, [int(i) for i in rec["page"]]))

    def _check(self) -> Any:
        rule = self.config.rollout
        if rule is None or not rule.auto or self.config.mode != "interleaved":
            return None
        found = decide(self.summary(), rule, self.phase)
        if found is None:
            return None
        kind, numbers = found
        return self.record(kind, {**numbers, "auto": True})

    def record(self, kind: str, numbers: dict[str, Any]) -> Any:
        """Take decision ``kind`` (``promote``/``rollback``): the new phase, a fresh tally, and
        its row queued after P's queued events; the write's future."""
        payload = {
            "comparison": self.id,
            "production": self.production.name,
            "candidate": self.config.ranker,
            "time": time.time(),
            **numbers,
        }
        self.phase = "promoted" if kind == "promote" else "rolled-back"
        self.tally = Tally()
        row = (self.production.name, kind, self.production.name, json.dumps(payload))
        return self.production.store.submit_write(
            lambda db: db.execute(_INSERT, row).lastrowid, self.production.guard
        )

    # -- reading -------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The running comparison of the current phase (JSON-able)."""
        cfg = self.config
        if cfg.mode == "shadow":
            return shadow_summary(self.tally, cfg.alpha)
        n_opt = cfg.rollout.min_impressions if cfg.rollout is not None else 2000
        return interleaved_summary(self.tally, n_opt, cfg.alpha)

    def snapshot(self) -> dict[str, Any]:
        """:meth:`describe` under the production ranker's lock (one consistent reading)."""
        with self.production.lock:
            return self.describe()

    def describe(self) -> dict[str, Any]:
        """``GET …/comparison``: configuration, phase, who serves, and the running numbers
        (the caller holds the production ranker's lock, or reads a comparison at rest)."""
        out = {
            "production": self.production.name,
            "candidate": self.config.ranker,
            "candidate_present": self.candidate() is not None,
            "id": self.id,
            "mode": self.config.mode,
            "phase": self.phase,
            "serving": self.config.ranker if self.phase == "promoted" else self.production.name,
            "config": self.config.to_dict(),
            **self.summary(),
        }
        rule = self.config.rollout
        if rule is not None and self.config.mode == "interleaved":
            found = decide(out, rule, self.phase)
            out["next"] = None if found is None else found[0]
        return out

    # -- from the store ----------------------------------------------------------------

    def restore(self, after: int, decisions: list[tuple[int, str, int, dict[str, Any]]]) -> None:
        """Fold P's feedback events after seq ``after`` and the ``decisions`` that follow the
        comparison's ``candidate`` row (module docstring)."""
        self.phase, self.tally = "comparing", Tally()
        rows = _read(
            self.production.store.path,
            "SELECT e.seq, e.payload, i.shown, i.extra, i.propensities FROM events AS e "
            "JOIN impressions AS i ON i.ranker = e.ranker AND i.id = e.impression "
            "WHERE e.ranker = ? AND e.kind = 'feedback' AND e.seq > ? "
            "AND json_extract(i.extra, '$.comparison.id') = ? ORDER BY e.seq",
            (self.production.name, after, self.id),
        )
        # A decision follows the feedback events up to its event_seq (its own included).
        steps = [(int(d[2]), 1, i) for i, d in enumerate(decisions)]
        steps += [(int(r[0]), 0, i) for i, r in enumerate(rows)]
        for _, is_decision, i in sorted(steps):
            if is_decision:
                self.phase = "promoted" if decisions[i][1] == "promote" else "rolled-back"
                self.tally = Tally()
                continue
            r = rows[i]
            imp = _Logged(json.loads(r[2]), json.loads(r[3]), json.loads(r[4]))
            self._count(imp.extra[COMPARISON_KEY], imp, json.loads(r[1]))
        later = self._check()  # a decision due whose write was lost to a crash
        if later is not None:
            later.result()

    def reload(self) -> None:
        """Fold the store again (after P rebuilt itself from it)."""
        restore_one(self.rankers, self.production)


@dataclass(frozen=True)
class _Logged:
    shown: list[int]
    extra: dict[str, Any]
    propensities: dict[str, Any]


def restore_one(rankers: Rankers, production: Ranker) -> None:
    """Set ``production.candidate`` from the store (None when no comparison is attached)."""
    decisions = _decisions(production.store.path, production.name)
    starts = [i for i, d in enumerate(decisions) if d[1] == "candidate"]
    production.candidate = None
    if not starts or decisions[starts[-1]][3].get("action") != "attach":
        return
    row = decisions[starts[-1]]
    live = LiveComparison(rankers, production, CandidateConfig.from_dict(row[3]["config"]), row[0])
    production.candidate = live
    live.restore(row[2], decisions[starts[-1] + 1 :])


def restore_comparisons(rankers: Rankers) -> None:
    """Attach every comparison the store holds to its production ranker (at start)."""
    for ranker in rankers:
        restore_one(rankers, ranker)


def _check_pair(rankers: Rankers, production: Ranker, cand: Ranker) -> None:
    for other in rankers:
        live = other.candidate
        if (
            live is not None
            and other is not production
            and live.config.ranker
            in (
                production.name,
                cand.name,
            )
        ):
            raise RequestError(
                f"ranker {live.config.ranker!r} is already the candidate of {other.name!r}", 409
            )
    if cand.candidate is not None:
        raise RequestError(f"ranker {cand.name!r} has a candidate itself: it cannot be one", 409)
    pk, ck = production.model.provides.kind, cand.model.provides.kind
    if pk not in _KINDS or pk != ck:
        raise RequestError(
            f"a comparison needs both rankers to take clicks or top-k labels alike; "
            f"{production.name!r} takes {pk!r} and {cand.name!r} takes {ck!r}"
        )
    pd, cd = production.definition, cand.definition
    if (pd.n_features, pd.n_items) != (cd.n_features, cd.n_items):
        raise RequestError(
            f"ranker {cand.name!r} ranks other contexts: n_features/n_items "
            f"{cd.n_features}/{cd.n_items}, not {pd.n_features}/{pd.n_items}"
        )
    m = int(pd.n_items or 10**6)
    if _page(production, m) != _page(cand, m):
        raise RequestError(f"ranker {cand.name!r} has another page length (feedback k)")


def attach(rankers: Rankers, name: str, config: CandidateConfig) -> tuple[LiveComparison, bool]:
    """Attach ``config``'s candidate to ranker ``name``; ``(comparison, created)``.

    The same configuration again is no change (False); another one while a
    comparison runs is 409: DELETE it first.
    """
    production = rankers.get(name)
    try:
        check_config(config, name)
    except ValueError as exc:
        raise RequestError(str(exc)) from exc
    cand = rankers.get(config.ranker) if config.ranker != name else production
    with production.lock:
        live = production.candidate
        if live is not None:
            if live.config == config:
                return live, False
            raise RequestError(f"ranker {name!r} has a candidate already; DELETE it first", 409)
        _check_pair(rankers, production, cand)
        payload = json.dumps({"action": "attach", "config": config.to_dict(), "time": time.time()})
        row = (name, "candidate", name, payload)
        rowid = production.store.submit_write(
            lambda db: db.execute(_INSERT, row).lastrowid
        ).result()
        production.candidate = LiveComparison(rankers, production, config, int(rowid))
        return production.candidate, True


def detach(rankers: Rankers, name: str) -> None:
    """End ranker ``name``'s comparison (404 when none): its route serves its own list again."""
    production = rankers.get(name)
    with production.lock:
        live = production.candidate
        if live is None:
            raise RequestError(f"ranker {name!r} has no candidate", 404)
        payload = json.dumps({"action": "detach", "comparison": live.id, "time": time.time()})
        row = (name, "candidate", name, payload)
        production.store.submit_write(lambda db: db.execute(_INSERT, row)).result()
        production.candidate = None


def manual(rankers: Rankers, name: str, action: str) -> dict[str, Any]:
    """Promote or roll back by hand (``action``), recorded like the rule's decisions."""
    production = rankers.get(name)
    with production.lock:
        live = production.candidate
        if live is None:
            raise RequestError(f"ranker {name!r} has no candidate", 404)
        need = {"promote": "comparing", "rollback": "promoted"}[action]
        if live.phase != need:
            raise RequestError(f"cannot {action}: the comparison is {live.phase!r}", 409)
        summary = live.summary()
        numbers = {k: summary[k] for k in ("impressions", "wins", "losses", "ties") if k in summary}
        live.record(action, {**numbers, "rule": "manual", "auto": False}).result()
        out: dict[str, Any] = live.describe()
        return out


def history(rankers: Rankers, name: str) -> dict[str, Any]:
    """``GET …/rollout``: every decision of ranker ``name``'s comparisons, oldest first."""
    production = rankers.get(name)
    live = production.candidate
    steps = [
        {"seq": seq, "kind": kind, "after_event": event_seq, **payload}
        for seq, kind, event_seq, payload in _decisions(production.store.path, name)
    ]
    return {
        "ranker": name,
        "phase": None if live is None else live.phase,
        "rule": None if live is None else live.config.to_dict()["rollout"],
        "history": steps,
    }
