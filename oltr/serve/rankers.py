"""Rankers held in the process: a learner per name, its lock, its log in the store.

A :class:`Ranker` applies one request at a time (its lock), in this order:
check the request (nothing changes if it is refused), run the learner, submit
the request's write to the store, and answer once that write is committed.
Writes are committed in the order the ranker applied its requests, so the
learner state is a function of the event log: :func:`restore` rebuilds it
from the definition, the latest snapshot and the events after it, replaying
``rank`` and ``update`` calls in the logged order (the learner is
deterministic given its generators, which the snapshot holds). Should the
learner fail, or a write fail to commit, the ranker is rebuilt from the store
before its next request, and the writes it had computed from the failed state
are refused (:class:`~oltr.serve.groupcommit.WriteGuard`), so every answer the
service gives was computed from committed state.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oltr.feedback import FeedbackModel
from oltr.learners.base import Learner
from oltr.serve.clickfeedback import resume_round, round_extra
from oltr.serve.comparison import learns_from
from oltr.serve.groupcommit import WriteGuard
from oltr.serve.limits import ITEM_BYTES, Limits, PendingBudget
from oltr.serve.propensities import shown_propensities
from oltr.serve.protocol import (
    RankerDefinition,
    RequestError,
    build_ranker,
    feedback_depth,
    make_context,
    make_feedback_object,
    shown_list,
)
from oltr.serve.state import decode_state, dumps_state, encode_state, loads_state
from oltr.serve.store import Impression, Store, StoredEvent
from oltr.serve.warmup import warm_up
from oltr.types import Context
from oltr.version import __version__

__all__ = ["RECENT_IMPRESSIONS", "Ranker", "Rankers", "public_state", "replay_into"]

#: Pending impressions a ranker keeps in memory (with their features) for their feedback.
RECENT_IMPRESSIONS = 256


def _context(defn: RankerDefinition, imp: Impression) -> Context:
    if imp.features is None:
        return Context(t=imp.t, n_items=imp.n_items)
    x = imp.features
    x.flags.writeable = False
    return Context(t=imp.t, n_items=imp.n_items, features=x)


def _interleaving(imp: Impression) -> Any:
    enc = imp.extra.get("interleaving")
    return None if enc is None else decode_state(enc, None)


def replay_into(
    learner: Learner[Any],
    model: FeedbackModel,
    defn: RankerDefinition,
    store: Store,
    name: str,
    events: list[StoredEvent],
) -> int:
    """Apply logged ``events`` to ``learner`` as the service did; return the feedback rounds.

    Each ``rank`` event re-runs ``learner.rank`` on the logged context and
    checks that it reproduces the logged orders (a different learner version
    or a damaged log is reported, not silently learned from).
    """
    rounds = 0
    cache: dict[str, Impression] = {}
    for ev in events:
        imp = cache.get(ev.impression) or store.impression(name, ev.impression)
        if imp is None:
            raise RuntimeError(f"event {ev.seq} names unknown impression {ev.impression!r}")
        ctx = _context(defn, imp)
        orders = np.asarray(imp.orders, dtype=np.intp)
        if ev.kind == "rank":
            again = learner.rank(ctx)
            if not np.array_equal(again, orders):
                raise RuntimeError(
                    f"replaying event {ev.seq}: the learner ranked impression {imp.id} "
                    "differently than logged; the log does not belong to this learner"
                )
            cache[imp.id] = imp
        else:
            if learns_from(imp.extra):  # not a page of a comparison it did not produce
                fb, _ = make_feedback_object(
                    learner, model, orders, np.asarray(imp.shown), _interleaving(imp), ev.payload
                )
                resume_round(learner, imp.extra)
                learner.update(ctx, orders, fb)
            cache.pop(imp.id, None)
            rounds += 1
    return rounds


def public_state(learner: Learner[Any]) -> dict[str, Any]:
    """What GET shows of a learner: its parameters and, for linear scorers, the weights."""
    out: dict[str, Any] = {"class": type(learner).__name__}
    try:
        out["weights"] = np.asarray(learner.weights_)[0].tolist()  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # no weights before the first round
        pass
    return out


@dataclass
class Ranker:
    """One named ranker: definition, learner, lock, counters (see the module docstring).

    Each request is applied in two steps: under :attr:`lock`, ``*_locked``
    checks it, runs the learner and submits its write to the store's group
    commit, returning the answer and the write's future; the caller answers
    once the future completes (committed). The lock is released before the
    commit, so the next request to the same ranker is applied while the
    previous write is in flight, and both writes may share a commit; the
    store commits them in the order they were submitted. :meth:`rank` and
    :meth:`feedback` do both steps and block.
    """

    name: str
    definition: RankerDefinition
    learner: Learner[Any]
    model: FeedbackModel
    store: Store
    snapshot_every: int
    t: int = 0
    rounds: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    guard: WriteGuard = field(default_factory=WriteGuard)
    deleted: bool = False
    _swept: float = 0.0
    #: Impressions whose feedback is applied but not yet committed (a second one is 409).
    _answering: set[str] = field(default_factory=set)
    #: The latest impressions this process ranked that have no feedback yet, oldest first:
    #: most feedback comes soon after its list and needs no read of the store.
    _recent: OrderedDict[str, Impression] = field(default_factory=OrderedDict)
    #: The bytes each of :attr:`_recent` is charged to :attr:`budget` with.
    _sizes: dict[str, int] = field(default_factory=dict)
    #: The memory of pending impressions, shared by every ranker of the service.
    budget: PendingBudget = field(default_factory=lambda: PendingBudget(64 << 20))
    #: The live comparison with a candidate (:class:`oltr.serve.rollout.LiveComparison`).
    candidate: Any = None

    def rank(self, features: Any) -> dict[str, Any]:
        """Rank one list; log it; return the impression, the shown order and propensities."""
        with self.lock:
            answer, done = self.rank_locked(features)
        done.result()
        return answer

    def rank_locked(self, features: Any) -> tuple[dict[str, Any], Future[int]]:
        """:meth:`rank` with :attr:`lock` held by the caller; the answer and its commit."""
        self._ready()
        ctx = make_context(self.definition, self.t + 1, features)
        try:
            return self._rank(ctx)
        except RequestError:
            raise
        except Exception:
            self._reload()
            raise

    def _rank(self, ctx: Context) -> tuple[dict[str, Any], Future[int]]:
        prop_depth = feedback_depth(self.model, ctx.n_items)
        learner = self.learner
        orders = np.asarray(learner.rank(ctx))  # after any check: the learner's RNG moves here
        shown, il = shown_list(self.definition, ctx.t, orders)
        props = shown_propensities(learner, self.model, ctx, orders, shown, il, prop_depth)
        extra = round_extra(learner)  # what a click learner's update needs of this round
        if il is not None:
            extra["interleaving"] = encode_state(il)
        if self.candidate is not None:  # a comparison may show another page (rollout.py)
            shown, props = self.candidate.on_rank(ctx, shown, props, extra)
        imp = Impression(
            ranker=self.name,
            id=f"{ctx.t}-{secrets.token_hex(4)}",
            t=ctx.t,
            created=time.time(),
            n_items=ctx.n_items,
            features=ctx.features,
            orders=orders.tolist(),
            shown=np.asarray(shown).tolist(),
            extra=extra,
            propensities=props,
            status="pending",
        )
        done = self.store.submit_rank(imp, {}, self.guard)
        self.t = ctx.t
        self._keep(imp, orders.size + len(imp.shown))
        return {"impression": imp.id, "order": imp.shown, "propensities": props}, done

    def feedback(self, impression: str, body: dict[str, Any], ttl: float) -> dict[str, Any]:
        """Learn from the feedback on ``impression``; log it; return the round and any credit."""
        with self.lock:
            answer, done = self.feedback_locked(impression, body, ttl)
        done.result()
        return answer

    def feedback_locked(
        self, impression: str, body: dict[str, Any], ttl: float
    ) -> tuple[dict[str, Any], Future[int]]:
        """:meth:`feedback` with :attr:`lock` held by the caller; the answer and its commit."""
        self._ready()
        now = time.time()
        if now - self._swept > min(ttl, 1.0):  # sweep at most once a second
            self.store.submit_expire(self.name, now - ttl)
            self._swept = now
        if impression in self._answering:
            raise RequestError(f"impression {impression!r} already has its feedback", 409)
        imp = self._forget(impression) or self.store.impression(self.name, impression)
        if imp is None:
            raise RequestError(f"ranker {self.name!r} has no impression {impression!r}", 404)
        if imp.status == "pending" and imp.created < now - ttl:
            # too old, not swept yet: committed before the 410, so counts read after it agree
            self.store.submit_expire(self.name, now - ttl).result()
            raise RequestError(f"impression {impression!r} expired before its feedback", 410)
        if imp.status == "done":
            raise RequestError(f"impression {impression!r} already has its feedback", 409)
        if imp.status == "expired":
            raise RequestError(f"impression {impression!r} expired before its feedback", 410)
        orders, own = np.asarray(imp.orders, dtype=np.intp), learns_from(imp.extra)
        shown = np.asarray(imp.shown)
        fb, credit = make_feedback_object(  # a comparison's page is checked as a list of P's
            self.learner,
            self.model,
            orders if own else shown[None],
            shown,
            _interleaving(imp),
            body,
        )
        try:
            if own:
                resume_round(self.learner, imp.extra)
                self.learner.update(_context(self.definition, imp), orders, fb)
            self.rounds += 1
            snapshot = None
            if self.rounds % self.snapshot_every == 0:
                snapshot = (self.rounds, __version__, dumps_state(self.learner, __version__))

            def submit() -> Future[int]:
                return self.store.submit_feedback(self.name, impression, body, self.guard, snapshot)

            live = self.candidate
            done = submit() if live is None else live.on_feedback(imp, body, ttl, submit)
        except Exception:
            self._reload()
            raise
        self._answering.add(impression)
        done.add_done_callback(lambda _: self._answering.discard(impression))
        return {"round": self.rounds, **credit}, done

    def _keep(self, imp: Impression, entries: int) -> None:
        """Hold ``imp`` for its feedback, within the count and the shared bytes budget."""
        size = ITEM_BYTES * entries + (0 if imp.features is None else imp.features.nbytes)
        self._recent[imp.id] = imp
        self._sizes[imp.id] = size
        self.budget.charge(size)
        while self._recent and (len(self._recent) > RECENT_IMPRESSIONS or self.budget.over()):
            self._forget(next(iter(self._recent)))  # oldest first; the store still has it

    def _forget(self, impression: str) -> Impression | None:
        """Drop ``impression`` from memory (not from the store); what was held, if any."""
        imp = self._recent.pop(impression, None)
        if imp is not None:
            self.budget.release(self._sizes.pop(impression))
        return imp

    def forget_all(self) -> None:
        """Drop every pending impression from memory (the store keeps them)."""
        for impression in list(self._recent):
            self._forget(impression)

    def snapshot(self) -> None:
        """Store the learner's snapshot, covering every event it has applied."""
        with self.lock:
            text = dumps_state(self.learner, __version__)
            self.store.save_snapshot(self.name, self.rounds, __version__, text)

    def describe(self) -> dict[str, Any]:
        """Definition, counters and the learner's public state."""
        with self.lock:
            counts = self.store.counts(self.name)
            return {
                "name": self.name,
                "definition": self.definition.to_dict(),
                "rounds": self.rounds,
                "impressions": self.t,
                "pending": counts["pending"],
                "expired": counts["expired"],
                "learner": public_state(self.learner),
            }

    def _ready(self) -> None:
        if self.deleted:
            raise RequestError(f"no ranker named {self.name!r}", 404)
        if self.guard.stale:  # a write failed: what the learner holds was not committed
            self._reload()

    def _reload(self) -> None:
        """Rebuild the learner from the store, once every write submitted so far is settled."""
        self.store.barrier()
        self.guard.generation = self.guard.valid_from
        fresh = restore(self.store, self.name, self.definition, self.snapshot_every)
        self.learner, self.t, self.rounds = fresh.learner, fresh.t, fresh.rounds
        self._answering.clear()
        self.forget_all()
        if self.candidate is not None:
            self.candidate.reload()


def restore(store: Store, name: str, defn: RankerDefinition, snapshot_every: int) -> Ranker:
    """Rebuild ranker ``name`` from its definition, its snapshot and the events after it."""
    learner, model = build_ranker(defn)
    warm_up(defn, model)  # before the service listens: no compiling in a live request
    snap = store.snapshot(name)
    after, rounds = 0, 0
    if snap is not None:
        after, rounds, text = snap
        loads_state(text, learner)
    events = store.events(name, after)
    rounds += replay_into(learner, model, defn, store, name, events)
    return Ranker(name, defn, learner, model, store, snapshot_every, store.last_t(name), rounds)


class Rankers:
    """Every ranker of the service, by name, loaded from the store at start.

    ``limits`` bound what a new definition may ask (rankers already in the store
    are served as they are) and the memory their pending impressions share.
    """

    def __init__(
        self, store: Store, *, snapshot_every: int = 100, limits: Limits | None = None
    ) -> None:
        if snapshot_every < 1:
            raise ValueError(f"snapshot_every must be >= 1, got {snapshot_every}")
        self.store = store
        self.snapshot_every = snapshot_every
        self.limits = Limits() if limits is None else limits
        self.budget = PendingBudget(self.limits.max_pending_bytes)
        self._lock = threading.Lock()
        self._rankers: dict[str, Ranker] = {}
        for name, raw in store.rankers().items():
            ranker = restore(store, name, RankerDefinition(**raw), snapshot_every)
            ranker.budget = self.budget
            self._rankers[name] = ranker

    def __iter__(self) -> Iterator[Ranker]:
        with self._lock:
            return iter(list(self._rankers.values()))

    def get(self, name: str) -> Ranker:
        """The ranker ``name``; RequestError 404 if there is none."""
        ranker = self._rankers.get(name)
        if ranker is None:
            raise RequestError(f"no ranker named {name!r}", 404)
        return ranker

    def find(self, name: str) -> Ranker | None:
        """The ranker ``name``, or None."""
        return self._rankers.get(name)

    def put(self, name: str, defn: RankerDefinition) -> bool:
        """Create ``name`` (True), or confirm the same definition exists (False); 409 if not."""
        with self._lock:
            old = self._rankers.get(name)
            if old is not None:
                if old.definition != defn:
                    raise RequestError(
                        f"ranker {name!r} exists with another definition; DELETE it first", 409
                    )
                return False
            self.limits.check_definition(defn.n_items, defn.n_features)
            learner, model = build_ranker(defn)
            warm_up(defn, model)  # here, in the creating thread, not in its first request
            self.store.add_ranker(name, defn.to_dict())
            self._rankers[name] = Ranker(
                name, defn, learner, model, self.store, self.snapshot_every, budget=self.budget
            )
            return True

    def delete(self, name: str) -> None:
        """Remove ranker ``name`` and everything logged for it."""
        with self._lock:
            ranker = self.get(name)
            with ranker.lock:
                self.store.delete_ranker(name)  # committed after the ranker's queued writes
                ranker.deleted = True
                ranker.forget_all()
                del self._rankers[name]
