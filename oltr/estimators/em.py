"""Position bias by expectation-maximisation under the position-based model.

Wang, Golbandi, Bendersky, Metzler & Najork 2018, "Position Bias Estimation for
Unbiased Learning to Rank in Personal Search" (WSDM), §4. Clicks follow
``P(C = 1 | q, d, k) = θ_k γ_{q,d}`` with examination ``E ~ Bernoulli(θ_k)``
and relevance ``R ~ Bernoulli(γ_{q,d})`` hidden, ``C = E · R``. The log
likelihood is ``Σ c log θ_k γ_{q,d} + (1 − c) log(1 − θ_k γ_{q,d})`` over the
log's (c, q, d, k) (their eq. 4).

E-step (their §4.2): a click means E = R = 1; a skip gives

    P(E=1, R=0 | C=0) = θ_k (1 − γ) / (1 − θ_k γ)
    P(E=0, R=1 | C=0) = (1 − θ_k) γ / (1 − θ_k γ)
    P(E=0, R=0 | C=0) = (1 − θ_k)(1 − γ) / (1 − θ_k γ)

(:func:`posteriors`), so P(E=1 | C=0) is the first line and P(R=1 | C=0) the second.

M-step: θ_k ← Σ_{rows at k} [c + (1 − c) P(E=1 | c, q, d, k)] / #rows at k, and, in
the plain EM, γ_{q,d} ← Σ_{rows of (q,d)} [c + (1 − c) P(R=1 | c, q, d, k)] / #rows of (q,d).

Everything is computed on counts per (document, position) — ``C`` clicks out
of ``N`` impressions — since the sums above only need them: a (document,
position) cell contributes ``C + (N − C) P(· | C=0)``. The cost of an iteration
is O(documents × K), whatever the number of sessions.

Regression EM
-------------
A log from one deterministic logger shows each document at one position only;
then a free γ per document absorbs every click rate and θ is not identified.
Wang et al. (§4.3, Algorithm 1) tie γ to the documents' features,
γ_{q,d} = σ(f(x_{q,d})), and replace the γ update by a regression on the
posterior relevance: they sample binary labels r ~ Bernoulli(P(R=1 | c, q, d, k))
and fit a gradient-boosted decision tree (GBDT) to them. Here the regression is
a **logistic regression** f(x) = β₀ + xᵀβ on the standardised features, and its
M-step uses the expected labels instead of sampled ones: it maximises
Q(β) = Σ_d a_d log σ(f(x_d)) + (n_d − a_d) log(1 − σ(f(x_d))) − ½λ‖β‖²
with ``a_d = Σ_k C_dk + (N_dk − C_dk) P(R=1 | C=0)`` and ``n_d = Σ_k N_dk``
(the expectation of the sampled-label loss), by one Newton step per EM
iteration with step halving (a generalised EM step: Q does not decrease).
A linear score is less flexible than a GBDT; it identifies θ as long as
the documents' relevance is close to a logistic function of their features,
and its misfit can leak into θ where it correlates with position.
``regressor="gbdt"`` puts the paper's gradient-boosted trees in its place
(:mod:`oltr.estimators.em_trees`: fitted to the expected labels, the
deterministic equivalent of the sampled ones, started from the logistic fit).

Accuracy. On MQ2008 Fold 1 train, 10^6 simulated PBM sessions
(θ_k = (1/k)^η, top 10, Ranking SVM loggers of
:func:`oltr.logs.simulate.train_logger`), the largest relative error of θ_k
at positions 2–10 with the logistic regression is 11–12% (η = 1) and 16–18%
(η = 2) on a log of **one** deterministic logger (θ too low at deep
positions, about 1–2 bootstrap SE), but 5.1% (η = 1) and 7.5% (η = 2) on a log
of two loggers. A log of one deterministic logger identifies θ only through
the regression, whose misfit is then confounded with position; documents
shown at several positions (several loggers, or any variation of the
ranking) pin θ down. So regression EM meets a 10% accuracy bar only on logs
with such variation. The trees (ten refits from the logistic fit) move the
errors, within about one bootstrap SE (7–13% at deep positions, most of it
from the 471 queries, which more sessions do not shrink), to 8.8% and 12.6% on
one logger and 6.0% and 10.1% on two (η = 1, 2): 10% is met on as many logs as
with the logistic regression, at about 100 times its cost (a GBDT fit per
refit: ~50 s per estimate on MQ2008, ~6 s per bootstrap replicate); the
logistic regression stays the default.

Initialisation and stopping. The paper's Algorithm 1 starts from given θ and
f without fixing them; ULTRA (Ai et al. 2018, the reference implementation of
Wang et al.'s regression EM) starts from θ_k = 0.9 for every k, as we do;
γ starts at 0.5 (per-document) or at σ(β₀) with β₀ the logit of the overall
click rate divided by 0.9 and β = 0 (regression). We stop when the normalised
θ_k/θ_1 change by less than ``tol`` (relative) in one iteration, or after
``max_iter`` iterations (then ``converged`` is False).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from oltr.errors import InputError
from oltr.estimators.em_trees import check_tree_options, tree_steps
from oltr.estimators.propensity_fit import FitResult
from oltr.logs.binding import PositionCounts

__all__ = [
    "INITIAL_THETA",
    "REGRESSORS",
    "RELEVANCE_MODELS",
    "EMProblem",
    "em_problem",
    "log_likelihood",
    "posteriors",
]

#: θ_k at the start of EM (ULTRA's regression EM).
INITIAL_THETA = 0.9
#: How γ is modelled: a logistic regression on features, or one free value per document.
RELEVANCE_MODELS = ("regression", "per-document")
#: The regression of ``relevance="regression"``: logistic (default) or gradient-boosted trees.
REGRESSORS = ("logistic", "gbdt")
_EPS = 1e-9
#: Stopping tolerance of a bootstrap replicate (relative change of θ_k/θ_1), at most.
BOOTSTRAP_TOL = 1e-4


def posteriors(
    theta: ArrayLike, gamma: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """P(E=1 | C=0) and P(R=1 | C=0) under the PBM (Wang et al. 2018 §4.2; broadcasts).

    >>> pe, pr = posteriors(0.5, 0.5)
    >>> float(pe), float(pr)  # (0.25 / 0.75, 0.25 / 0.75)
    (0.3333333333333333, 0.3333333333333333)
    """
    t = np.asarray(theta, dtype=np.float64)
    g = np.asarray(gamma, dtype=np.float64)
    den = 1.0 - t * g
    return t * (1.0 - g) / den, (1.0 - t) * g / den


def log_likelihood(
    clicks: ArrayLike, shown: ArrayLike, theta: ArrayLike, gamma: ArrayLike
) -> float:
    """Σ C log θγ + (N − C) log(1 − θγ) over cells (Wang et al. 2018 eq. 4, on counts)."""
    c = np.asarray(clicks, dtype=np.float64)
    n = np.asarray(shown, dtype=np.float64)
    p = np.clip(np.asarray(theta)[None, :] * np.asarray(gamma)[:, None], _EPS, 1 - _EPS)
    return float((c * np.log(p) + (n - c) * np.log1p(-p)).sum())


def _log_sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return -np.logaddexp(0.0, -z)


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))


@dataclass
class EMProblem:
    """The counts of the documents that were shown, ready for EM under query weights.

    Build it with :func:`em_problem`; :meth:`fit` runs EM (see the module docstring).
    """

    clicks: NDArray[np.float64]
    shown: NDArray[np.float64]
    groups: NDArray[np.int64]
    n_groups: int
    design: NDArray[np.float64] | None
    relevance: str = "regression"
    tol: float = 1e-6
    max_iter: int = 5000
    l2: float = 1.0
    details: dict[str, Any] = field(default_factory=dict)
    regressor: str = "logistic"
    tree_options: dict[str, Any] = field(default_factory=dict)

    def _start(self, c: NDArray[np.float64], n: NDArray[np.float64]) -> tuple[Any, Any]:
        k = c.shape[1]
        theta = np.full(k, INITIAL_THETA)
        if self.design is None:
            return theta, np.full(c.shape[0], 0.5)
        rate = float(c.sum() / max(n.sum(), 1.0)) / INITIAL_THETA
        rate = min(max(rate, 1e-3), 1 - 1e-3)
        beta = np.zeros(self.design.shape[1])
        beta[0] = np.log(rate / (1 - rate))
        return theta, beta

    def fit(self, weights: NDArray[np.float64] | None, start: Any) -> FitResult:
        """EM on the counts, each query's multiplied by ``weights`` (None: all 1)."""
        if weights is None:
            c, n = self.clicks, self.shown
        else:
            w = weights[self.groups][:, None]
            c, n = self.clicks * w, self.shown * w
        if not (n.sum(axis=0) > 0).all():
            raise InputError("a position has no impression under these weights")
        if start is None:
            start = self._start(c, n)
        theta, second = (np.array(a, dtype=np.float64) for a in start)
        if self.design is None:
            second = _logit(np.clip(second, _EPS, 1 - _EPS))
        # A bootstrap replicate needs θ to well within its standard error, not to ``tol``.
        tol = self.tol if weights is None else max(self.tol, BOOTSTRAP_TOL)
        with threadpool_limits(1, user_api="blas"):  # small products: threads only contend
            theta, second, iterations, converged = self._run(c, n, theta, second, tol)
        gamma = _sigmoid(second if self.design is None else self.design @ second)
        details = dict(self.details)
        if self.design is not None and self.regressor == "gbdt":
            start_next = (theta, second)  # replicates warm-start the logistic stage
            theta, score, refits, settled = tree_steps(
                c, n, self.design[:, 1:], theta, self.design @ second, self.tree_options,
                bootstrap=weights is not None,
            )  # fmt: skip
            gamma = _sigmoid(score)
            details["tree_refits"] = refits
            details["trees_converged"] = settled
            converged = converged and settled
            details["log_likelihood"] = log_likelihood(c, n, theta, gamma)
            details["theta_1"] = float(theta[0])
            return FitResult(theta / theta[0], iterations, converged, start_next, details)
        details["log_likelihood"] = log_likelihood(c, n, theta, gamma)
        details["theta_1"] = float(theta[0])
        return FitResult(
            theta=theta / theta[0],
            iterations=iterations,
            converged=converged,
            start=(theta, gamma if self.design is None else second),
            details=details,
        )

    def _run(
        self,
        c: NDArray[np.float64],
        n: NDArray[np.float64],
        theta: NDArray[np.float64],
        second: NDArray[np.float64],
        tol: float,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], int, bool]:
        """Iterate the EM map, accelerated by SQUAREM, to the stopping rule.

        Works on the cells with impressions only (a deterministic logger fills
        one cell of K per document), as flat arrays.
        """
        n_rows, k = n.shape
        row, pos = np.nonzero(n > 0)
        cc, nn = c[row, pos], n[row, pos]
        skips = nn - cc
        nk = np.bincount(pos, weights=nn, minlength=k).astype(np.float64)
        nd = np.bincount(row, weights=nn, minlength=n_rows).astype(np.float64)
        seen = nd > 0
        design = self.design
        ridge = None
        if design is not None:
            ridge = np.full(design.shape[1], self.l2)
            ridge[0] = 0.0  # the intercept is not penalised

        def gamma_of(x: NDArray[np.float64]) -> NDArray[np.float64]:
            z = x[k:] if design is None else design @ x[k:]
            return np.clip(_sigmoid(z), _EPS, 1 - _EPS)

        def em_map(x: NDArray[np.float64]) -> NDArray[np.float64]:
            theta = np.clip(_sigmoid(x[:k]), _EPS, 1 - _EPS)
            gamma = gamma_of(x)
            # E-step (posteriors of the skips), then the closed-form θ update.
            pe, pr = posteriors(theta[pos], gamma[row])
            new_theta = np.bincount(pos, weights=cc + skips * pe, minlength=k) / nk
            relevant = np.bincount(row, weights=cc + skips * pr, minlength=n_rows).astype(float)
            if design is None:
                g = gamma.copy()
                g[seen] = relevant[seen] / nd[seen]
                rest = _logit(np.clip(g, _EPS, 1 - _EPS))
            else:
                assert ridge is not None
                rest = _newton_step(design, relevant, nd, x[k:], ridge)
            return np.concatenate([_logit(np.clip(new_theta, _EPS, 1 - _EPS)), rest])

        def objective(x: NDArray[np.float64]) -> float:
            p = np.clip(_sigmoid(x[:k])[pos] * gamma_of(x)[row], _EPS, 1 - _EPS)
            value = float((cc * np.log(p) + skips * np.log1p(-p)).sum())
            if ridge is not None:
                value -= 0.5 * float((ridge * x[k:] ** 2).sum())
            return value

        x = np.concatenate([_logit(np.clip(theta, _EPS, 1 - _EPS)), second])
        x, iterations, converged = _squarem(em_map, objective, x, k, tol, self.max_iter)
        return _sigmoid(x[:k]), x[k:], iterations, converged


def _logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.log(p) - np.log1p(-p))


def _squarem(
    em_map: Any, objective: Any, x: NDArray[np.float64], k: int, tol: float, max_iter: int
) -> tuple[NDArray[np.float64], int, bool]:
    """Fixed point of ``em_map`` by SQUAREM (Varadhan & Roland 2008, Scand. J. Stat., scheme S3).

    One cycle: x1 = F(x0), x2 = F(x1), r = x1 − x0, v = x2 − x1 − r,
    α = −‖r‖/‖v‖ (at most −1), x' = F(x0 − 2αr + α²v); x' is kept if the
    (penalised) log likelihood did not drop below that of x2, else x2 (a plain
    EM step pair), so every cycle is monotone like EM. ``iterations`` counts EM
    map evaluations. Stops when θ_k/θ_1 (the first ``k`` entries, on the logit
    scale) change by less than ``tol`` relative in one cycle.
    """
    evaluations = 0
    while evaluations < max_iter:
        x1 = em_map(x)
        x2 = em_map(x1)
        evaluations += 2
        r = x1 - x
        v = x2 - x1 - r
        nv = float(np.linalg.norm(v))
        new = x2
        if nv > 0:
            alpha = min(-1.0, -float(np.linalg.norm(r)) / nv)
            jump = x - 2 * alpha * r + alpha**2 * v
            if np.all(np.isfinite(jump)):
                cand = em_map(jump)
                evaluations += 1
                if np.all(np.isfinite(cand)) and objective(cand) >= objective(x2):
                    new = cand
        done = _close(_sigmoid(new[:k]), _sigmoid(x[:k]), tol)
        x = new
        if done:
            return x, evaluations, True
    return x, evaluations, False


def _close(new: NDArray[np.float64], old: NDArray[np.float64], tol: float) -> bool:
    a = new / new[0]
    b = old / old[0]
    return bool(np.max(np.abs(a - b) / b) < tol)


def _q(
    Z: NDArray[np.float64],
    a: NDArray[np.float64],
    n: NDArray[np.float64],
    beta: NDArray[np.float64],
    ridge: NDArray[np.float64],
) -> float:
    z = Z @ beta
    return float(
        (a * _log_sigmoid(z) + (n - a) * _log_sigmoid(-z)).sum() - 0.5 * (ridge * beta**2).sum()
    )


def _newton_step(
    Z: NDArray[np.float64],
    a: NDArray[np.float64],
    n: NDArray[np.float64],
    beta: NDArray[np.float64],
    ridge: NDArray[np.float64],
) -> NDArray[np.float64]:
    """One Newton step on the expected log likelihood Q(β), halved until Q does not drop."""
    p = _sigmoid(Z @ beta)
    grad = Z.T @ (a - n * p) - ridge * beta
    hess = (Z * (n * p * (1 - p))[:, None]).T @ Z + np.diag(ridge) + 1e-10 * np.eye(Z.shape[1])
    try:
        step = np.linalg.solve(hess, grad)
    except np.linalg.LinAlgError:
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
    before = _q(Z, a, n, beta, ridge)
    t = 1.0
    for _ in range(30):
        cand = beta + t * step
        if _q(Z, a, n, cand, ridge) >= before - 1e-12 * abs(before):
            return cand
        t *= 0.5
    return beta


def _design(features: NDArray[np.float64]) -> NDArray[np.float64]:
    """Intercept plus the non-constant features, standardised (mean 0, sd 1)."""
    X = np.asarray(features, dtype=np.float64)
    sd = X.std(axis=0)
    keep = sd > 1e-12
    Xs = (X[:, keep] - X[:, keep].mean(axis=0)) / sd[keep]
    return np.hstack([np.ones((X.shape[0], 1)), Xs])


def em_problem(
    counts: PositionCounts,
    *,
    features: ArrayLike | None = None,
    groups: NDArray[np.int64] | None = None,
    relevance: str = "regression",
    tol: float = 1e-6,
    max_iter: int = 5000,
    l2: float = 1.0,
    regressor: str = "logistic",
    tree_options: dict[str, Any] | None = None,
) -> EMProblem:
    """Prepare EM on ``counts`` (summed over loggers).

    Parameters
    ----------
    counts
        Clicks and impressions per (row, position).
    features
        Array (n_rows, d): the rows' features (needed for ``relevance="regression"``).
    groups
        Array (n_rows,): the query of every row, the bootstrap's unit (default:
        every row its own unit).
    relevance
        ``"regression"`` (γ = σ(β₀ + xᵀβ), Wang et al.'s regression EM with a
        logistic regression in place of their GBDT) or ``"per-document"`` (a
        free γ per row: the plain EM, which needs documents shown at several positions).
    tol, max_iter
        Stopping rule (module docstring).
    l2
        λ of the ridge penalty on β (not on β₀), on standardised features, in
        units of impressions: negligible against large logs, it keeps β finite
        when a feature separates clicked from unclicked documents.
    regressor
        ``"logistic"`` (default) or ``"gbdt"``: gradient-boosted trees
        (:mod:`oltr.estimators.em_trees`), started from the logistic fit.
    tree_options
        Options of ``"gbdt"`` (:data:`oltr.estimators.em_trees.TREE_DEFAULTS`).
    """
    if relevance not in RELEVANCE_MODELS:
        raise InputError(
            f"unknown relevance model {relevance!r}; choose one of {list(RELEVANCE_MODELS)}"
        )
    if not (tol > 0) or isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise InputError(f"tol must be > 0 and max_iter an int >= 1, got {tol!r}, {max_iter!r}")
    if regressor not in REGRESSORS:
        raise InputError(f"unknown regressor {regressor!r}; choose one of {list(REGRESSORS)}")
    if regressor == "gbdt" and relevance != "regression":
        raise InputError("regressor='gbdt' needs relevance='regression'")
    trees = check_tree_options(tree_options) if regressor == "gbdt" else {}
    if not (l2 >= 0):
        raise InputError(f"l2 must be >= 0, got {l2!r}")
    total = counts.total()
    n_rows = total.clicks.shape[0]
    keep = total.shown.sum(axis=1) > 0
    group = np.arange(n_rows, dtype=np.int64) if groups is None else np.asarray(groups, np.int64)
    design = None
    if relevance == "regression":
        if features is None:
            raise InputError(
                "em with relevance='regression' needs the documents' features: give a bound "
                "log, or counts with dataset=; or use relevance='per-document'"
            )
        X = np.asarray(features, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != n_rows:
            raise InputError(f"features must have shape ({n_rows}, d), got {X.shape}")
        design = _design(X[keep])
    kept_groups = group[keep]
    _, dense = np.unique(kept_groups, return_inverse=True)
    return EMProblem(
        clicks=np.ascontiguousarray(total.clicks[keep]),
        shown=np.ascontiguousarray(total.shown[keep]),
        groups=dense.astype(np.int64),
        n_groups=int(dense.max()) + 1 if dense.size else 0,
        design=design,
        relevance=relevance,
        tol=float(tol),
        max_iter=int(max_iter),
        l2=float(l2),
        details={
            "relevance": relevance,
            "regressor": regressor if relevance == "regression" else None,
            "tol": float(tol),
            "max_iter": int(max_iter),
        },
        regressor=regressor,
        tree_options=trees,
    )
