"""The statistics of a live comparison: outcomes, intervals, the rollout rule (pure functions).

A production ranker P serves a route; a candidate C is compared with it in one
of two modes (:mod:`oltr.serve.rollout` runs them):

* **interleaved** — on a share of the requests the page is the team-draft
  interleaving of P's and C's lists (Radlinski, Kurup & Joachims 2008, §4), and
  the clicks on it credit one side: outcome ``o = +1`` when C's team got more
  clicks, ``−1`` when P's did, ``0`` on a tie (no click, or as many on both);
* **shadow** — C ranks every request, its list is logged and never shown; what
  the logged clicks on P's lists say about C is judged off-policy
  (:func:`shadow_summary`).

**Interleaved outcomes.** With ``W`` wins, ``L`` losses and ``T`` ties of C over
``n = W + L + T`` compared impressions (each with its feedback):

* win rate ``q = W/(W + L)`` (ties left out) with the Wilson score interval
  (Wilson 1927, JASA 22:209–212, eq. for the two roots of
  ``|q̂ − q| = z√(q(1 − q)/m)``), :func:`wilson_interval`;
* advantage ``Δ = P(C wins) − P(P wins) = E[o]``, estimated by
  ``Δ̂ = (W − L)/n``, with a **confidence sequence**: an interval valid at every
  ``n`` at once, so that it may be looked at after every impression and acted
  on at a data-dependent time, with its error rate kept. Each ``o_i ∈ [−1, 1]``
  is 1-sub-Gaussian (Hoeffding's lemma: range 2, variance proxy (2/2)² = 1), and
  Robbins' normal mixture boundary (Robbins 1970, "Statistical methods related
  to the law of the iterated logarithm", Ann. Math. Statist. 41:1397–1409;
  Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric,
  nonasymptotic confidence sequences", Ann. Statist. 49:1055–1080, the normal
  mixture boundary for sub-Gaussian increments; here in the mean scale of
  Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas 2021, "Time-uniform central
  limit theory", whose reference code ``drconfseq`` computes the same margin)
  gives, for each side at level ``α/2``,

  .. math::
      |Δ̂_n − Δ| \\le σ \\sqrt{\\frac{2 (n ρ² + 1)}{n² ρ²}
      \\log\\frac{\\sqrt{n ρ² + 1}}{α/2}}\\quad\\text{for all } n \\ge 1

  with probability at least ``1 − α``, for any ``ρ > 0`` fixed in advance;
  ``ρ² = (2 log(2/α) + log(1 + 2 log(2/α)))/n_opt`` makes the boundary nearly
  tightest at ``n_opt`` (the closed-form approximation of the same papers),
  here the rule's ``min_impressions``. :func:`mixture_margin`. The bound is a
  martingale bound: while a ranker learns, ``Δ`` is the average of the
  advantages of the successive pairs, and the sequence still covers it.

**The rule** (:func:`decide`). Before a promotion: promote C when
``n ≥ min_impressions`` and the lower bound of ``Δ`` exceeds ``margin``.
After it (C shows its own list to users, P is the one compared): roll back when
the upper bound of ``Δ`` — C's advantage over the previous production ranker,
counted afresh from the promotion — falls below ``−margin``, at any ``n``.
Because the bounds hold at every ``n`` simultaneously, the probability that
the rule ever promotes a C with ``Δ ≤ margin`` is at most ``α/2``, and ever
rolls back a C with ``Δ ≥ −margin`` at most ``α/2``, however long it runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.special import ndtri

from oltr.errors import InputError
from oltr.estimators.intervals import normal_interval
from oltr.estimators.loggedlists import logged_lists, metric_rewards
from oltr.estimators.offpolicy import ips, snips

__all__ = [
    "COMPARISON_KEY",
    "CandidateConfig",
    "RolloutRule",
    "Tally",
    "clicked_positions",
    "decide",
    "interleaved_summary",
    "learns_from",
    "mixture_margin",
    "shadow_summary",
    "wilson_interval",
]

#: The key of an impression's ``extra`` that records what a comparison did with it.
COMPARISON_KEY = "comparison"
#: Who produced the page of an impression: P's list, C's list, or the interleaving of both.
SHOWN_BY = ("production", "candidate", "interleaved")


@dataclass(frozen=True)
class RolloutRule:
    """When to promote and roll back (module docstring); ``auto=False`` only recommends."""

    min_impressions: int = 2000
    margin: float = 0.0
    auto: bool = True


@dataclass(frozen=True)
class CandidateConfig:
    """A candidate ranker compared with a production ranker (the body of ``PUT …/candidate``)."""

    ranker: str
    mode: str = "interleaved"
    share: float = 0.2
    method: str = "team-draft"
    alpha: float = 0.05
    rollout: RolloutRule | None = None

    def to_dict(self) -> dict[str, Any]:
        """The configuration as JSON-able data (what a ``candidate`` decision records)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CandidateConfig:
        """Inverse of :meth:`to_dict`."""
        rule = raw.get("rollout")
        return cls(**{**raw, "rollout": None if rule is None else RolloutRule(**rule)})


@dataclass
class Tally:
    """The outcomes of one phase of a comparison, from the candidate's side."""

    wins: int = 0
    losses: int = 0
    ties: int = 0
    #: Shadow mode: impressions whose shown top item is the candidate's top item.
    agree_top: int = 0
    #: Shadow mode, per impression with feedback: the clicks on the page, the page, the
    #: logged prefix probabilities (empty when the production ranker logs none) and the
    #: candidate's page (what the off-policy estimators read).
    shadow: list[tuple[list[bool], list[int], list[float], list[int]]] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Compared impressions with feedback (interleaved) or impressions judged (shadow)."""
        return self.wins + self.losses + self.ties + len(self.shadow)

    def add(self, outcome: int) -> None:
        """Count one interleaved outcome: +1 the candidate won, −1 it lost, 0 a tie."""
        if outcome > 0:
            self.wins += 1
        elif outcome < 0:
            self.losses += 1
        else:
            self.ties += 1


def learns_from(extra: dict[str, Any]) -> bool:
    """Whether the production ranker learns from the feedback of an impression.

    It learns from its own pages only: not from an interleaved page, nor from a
    page the candidate produced after a promotion (that feedback goes to the
    candidate, which produced it).
    """
    rec = extra.get(COMPARISON_KEY)
    return rec is None or rec.get("shown") == "production"


def clicked_positions(body: dict[str, Any], n: int) -> np.ndarray[Any, Any]:
    """Boolean clicks on the first ``n`` shown positions from a feedback body.

    ``clicks`` (positions) are clicks; ``labels`` (grades of the top shown) count
    as a click where the grade is > 0. The body was checked by the route already.
    """
    out = np.zeros(n, dtype=bool)
    if body.get("clicks") is not None:
        pos = np.asarray(body["clicks"], dtype=np.intp)
        out[pos[pos < n]] = True
    elif body.get("labels") is not None:
        labels = np.asarray(body["labels"], dtype=np.float64)[:n]
        out[: labels.size] = labels > 0
    return out


def wilson_interval(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (Wilson 1927).

    ``(q̂ + z²/2m ± z √(q̂(1 − q̂)/m + z²/4m²)) / (1 + z²/m)`` with
    ``z = Φ⁻¹(1 − α/2)``; ``(0, 1)`` when ``trials == 0``.

    >>> lo, hi = wilson_interval(0, 10)
    >>> lo, round(hi, 4)
    (0.0, 0.2775)
    """
    if trials == 0:
        return 0.0, 1.0
    z = float(ndtri(1.0 - alpha / 2.0))
    q, m = successes / trials, float(trials)
    centre = q + z * z / (2 * m)
    half = z * math.sqrt(q * (1 - q) / m + z * z / (4 * m * m))
    den = 1 + z * z / m
    return max(0.0, (centre - half) / den), min(1.0, (centre + half) / den)


def mixture_margin(n: int, n_opt: int, alpha: float = 0.05, sigma: float = 1.0) -> float:
    """Half-width at ``n`` of the two-sided normal mixture confidence sequence (module doc).

    >>> mixture_margin(0, 100)
    inf
    >>> mixture_margin(2000, 2000) > mixture_margin(2000, 2000, alpha=0.5)
    True
    """
    if n <= 0:
        return math.inf
    a = alpha / 2.0
    rho2 = (2 * math.log(1 / a) + math.log(1 + 2 * math.log(1 / a))) / max(n_opt, 1)
    v = n * rho2 + 1.0
    return sigma * math.sqrt(2.0 * v * math.log(math.sqrt(v) / a) / (n * n * rho2))


def interleaved_summary(tally: Tally, n_opt: int, alpha: float) -> dict[str, Any]:
    """Counts, the win rate with its Wilson interval, the advantage with its confidence
    sequence (module docstring), as JSON-able data."""
    w, lo, t = tally.wins, tally.losses, tally.ties
    n = w + lo + t
    q_lo, q_hi = wilson_interval(w, w + lo, alpha)
    est = (w - lo) / n if n else 0.0
    half = mixture_margin(n, n_opt, alpha)
    return {
        "impressions": n,
        "wins": w,
        "losses": lo,
        "ties": t,
        "win_rate": {
            "estimate": w / (w + lo) if w + lo else None,
            "interval": [q_lo, q_hi],
            "method": "wilson on wins among non-ties",
        },
        "advantage": {
            "estimate": est,
            "interval": [max(-1.0, est - half), min(1.0, est + half)],
            "method": "normal-mixture confidence sequence, outcomes in [-1, 1] (1-sub-Gaussian)",
        },
        "alpha": alpha,
    }


def decide(
    summary: dict[str, Any], rule: RolloutRule, phase: str
) -> tuple[str, dict[str, Any]] | None:
    """The decision the rule takes on ``summary`` in ``phase``, or None (module docstring).

    ``phase`` is ``"comparing"`` (before a promotion) or ``"promoted"``; returns
    ``("promote" | "rollback", numbers)``, the numbers being what the decision
    records: counts, estimate, interval and the rule in words.
    """
    if phase not in ("comparing", "promoted"):
        return None
    adv = summary.get("advantage")
    if adv is None:
        return None
    low, high = adv["interval"]
    n = summary["impressions"]
    numbers: dict[str, Any] = {
        k: summary[k] for k in ("impressions", "wins", "losses", "ties", "alpha") if k in summary
    }
    numbers.update({"estimate": adv["estimate"], "interval": [low, high]})
    if phase == "comparing" and n >= rule.min_impressions and low > rule.margin:
        rule_text = (
            f"lower bound {low:.4f} of the advantage > margin {rule.margin} "
            f"after {n} >= {rule.min_impressions} impressions"
        )
        return "promote", {**numbers, "rule": rule_text}
    if phase == "promoted" and n > 0 and high < -rule.margin:
        rule_text = (
            f"upper bound {high:.4f} of the promoted ranker's advantage over the previous "
            f"one < -margin {-rule.margin}"
        )
        return "rollback", {**numbers, "rule": rule_text}
    return None


def check_config(cfg: CandidateConfig, production: str) -> None:
    """Refuse a configuration that cannot run, naming the field (InputError)."""
    if cfg.ranker == production:
        raise InputError(f"candidate.ranker: {production!r} cannot be its own candidate")
    if cfg.mode not in ("shadow", "interleaved"):
        raise InputError(f"candidate.mode must be 'shadow' or 'interleaved', got {cfg.mode!r}")
    if cfg.method != "team-draft":
        raise InputError(f"candidate.method must be 'team-draft', got {cfg.method!r}")
    if cfg.mode == "interleaved" and not 0.0 < cfg.share <= 1.0:
        raise InputError(f"candidate.share must be in (0, 1], got {cfg.share}")
    if not 0.0 < cfg.alpha < 1.0:
        raise InputError(f"candidate.alpha must be in (0, 1), got {cfg.alpha}")
    if cfg.rollout is not None and cfg.mode != "interleaved":
        raise InputError(
            "candidate.rollout needs mode 'interleaved': a shadow comparison has no "
            "interval that stays valid under repeated looks (see the serving guide)"
        )


def shadow_summary(tally: Tally, alpha: float) -> dict[str, Any]:
    """What a shadow comparison can say about the candidate, as JSON-able data.

    Always: how often the candidate's top item is the shown top item, with its
    Wilson interval. When every judged impression of the production ranker logged
    prefix probabilities (a stochastic ranker, :mod:`oltr.serve.propensities`),
    the candidate (deterministic given its list) is judged off-policy for the
    metrics ``clicks@1`` and ``dcg@K`` (K: the page) with :func:`~oltr.estimators.
    offpolicy.ips` and :func:`~oltr.estimators.offpolicy.snips` (target prefix
    probability 1 where its prefix equals the shown one, else 0), and its
    advantage over the production ranker, ``V(C) − V(P)``, is the mean of the
    paired terms ``w_i R_i − R_i`` with a normal interval. These intervals hold
    at a fixed n, not under repeated looks, so no rollout acts on them. A
    deterministic production ranker logs no probabilities: then a candidate that
    disagrees with it has no estimate (its pages were never shown).
    """
    n = len(tally.shadow)
    lo, hi = wilson_interval(tally.agree_top, n, alpha)
    out: dict[str, Any] = {
        "impressions": n,
        "agree_top": {
            "count": tally.agree_top,
            "rate": tally.agree_top / n if n else None,
            "interval": [lo, hi],
            "method": "wilson",
        },
        "alpha": alpha,
    }
    if n == 0 or any(not row[2] for row in tally.shadow):
        out["off_policy"] = None
        out["note"] = (
            "the production ranker logs no list probabilities (deterministic): only the "
            "agreement of the top position is estimable"
        )
        return out
    k = min(min(len(r[1]), len(r[2]), len(r[3])) for r in tally.shadow)
    shown = np.array([r[1][:k] for r in tally.shadow], dtype=np.intp)
    clicks = np.array([r[0][:k] for r in tally.shadow], dtype=np.float64)
    logging = np.array([r[2][:k] for r in tally.shadow], dtype=np.float64)
    cand = np.array([r[3][:k] for r in tally.shadow], dtype=np.intp)
    target = np.cumprod(cand == shown, axis=1).astype(np.float64)
    log = logged_lists(shown, clicks)
    estimates = {}
    for metric in ("clicks@1", f"dcg@{k}"):
        est = ips(
            log, metric, logging_prob=logging, target_prob=target, alpha=alpha, interval="normal"
        )
        depth = 1 if metric == "clicks@1" else k
        w = target[:, depth - 1] / logging[:, depth - 1]
        rewards = metric_rewards(log, metric).sum(axis=1)
        d_lo, d_hi, _ = normal_interval(w * rewards - rewards, alpha=alpha)
        entry: dict[str, Any] = {
            "production": float(rewards.mean()),
            "ips": [est.value, est.ci_low, est.ci_high],
            "matched": est.matched,
            "advantage": {
                "estimate": float((w * rewards - rewards).mean()),
                "interval": [d_lo, d_hi],
                "method": "normal, paired ips terms",
            },
        }
        if est.matched:
            sn = snips(
                log, metric, logging_prob=logging, target_prob=target, alpha=alpha,
                interval="normal",
            )  # fmt: skip
            entry["snips"] = [sn.value, sn.ci_low, sn.ci_high]
        estimates[metric] = entry
    out["off_policy"] = estimates
    return out
