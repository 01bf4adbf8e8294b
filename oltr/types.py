"""Shared types of the online protocol: contexts, per-run generators, parameters.

What a learner may see before ranking is a :class:`Context`; what it may see
after ranking is a feedback object (:mod:`oltr.feedback`). Ground-truth
relevance appears in neither: it stays inside the environment, which uses it
for feedback and evaluation only (DESIGN.md, "A learner must never see more
than its feedback model reveals").

Runs are batched along a leading axis ``B``. Every run owns its own
:class:`numpy.random.Generator`; :class:`RunGenerators` holds the ``B``
generators and draws stacked arrays from them, so learner code reads as array
code while run ``b`` draws exactly what it would draw alone (its stream never
depends on ``B`` or on the other runs of the batch).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.random import RNGLike, child_rng
from oltr.validation import check_n_runs

__all__ = [
    "Configurable",
    "Context",
    "FloatArray",
    "Orders",
    "RunGenerators",
    "RunRNGLike",
    "read_only",
]

#: Item indices by position, best first, with leading run axes: shape (B, m) or (B, 2, m).
Orders: TypeAlias = NDArray[np.intp]
FloatArray: TypeAlias = NDArray[np.float64]


def read_only(array: NDArray[Any]) -> NDArray[Any]:
    """A read-only view of ``array`` (the data are shared, not copied)."""
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False, init=False)
class Context:
    """What a learner may see before it ranks: the round, the list size, features.

    The same context is shown to all ``B`` runs of a batch. It never holds
    relevance.

    Parameters
    ----------
    t
        The round, 1-based.
    n_items
        Number of items ``m`` in this round's list (>= 1); may change between
        rounds for query streams.
    features
        Read-only array of shape (n_items, n_features) for contextual
        environments, None for a fixed set of items.
    qid
        Query identifier for query streams, None otherwise.

    Examples
    --------
    >>> ctx = Context(t=1, n_items=3)
    >>> ctx.n_features, ctx.features is None
    (0, True)
    """

    t: int
    n_items: int
    features: FloatArray | None = None
    qid: int | None = None

    def __init__(
        self, t: int, n_items: int, features: FloatArray | None = None, qid: int | None = None
    ) -> None:
        # Built every round: filling the instance dict directly skips the frozen
        # dataclass's per-field object.__setattr__ (the fields stay frozen afterwards).
        fields = self.__dict__
        fields["t"] = t
        fields["n_items"] = n_items
        fields["features"] = features
        fields["qid"] = qid

    @property
    def n_features(self) -> int:
        """Number of feature columns (0 when there are no features)."""
        return 0 if self.features is None else int(self.features.shape[1])


# ---------------------------------------------------------------------------
# per-run generators

RunRNGLike: TypeAlias = "RNGLike | RunGenerators | Sequence[np.random.Generator]"
_Shape = int | tuple[int, ...]


def _shape(shape: _Shape) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int | np.integer) else tuple(int(s) for s in shape)


class RunGenerators(Sequence[np.random.Generator]):
    """One :class:`numpy.random.Generator` per run, with stacked draws.

    ``rngs.random((m,))`` returns an array of shape ``(B, m)`` whose row ``b``
    is ``rngs[b].random((m,))``: each run draws from its own stream, in the
    same way whatever the batch, so a run's result does not depend on ``B`` or
    on which runs share its batch. The draws loop over runs in Python (one
    generator call per run); that is the price of per-run streams.

    Parameters
    ----------
    generators
        The ``B >= 1`` generators, one per run.

    Examples
    --------
    >>> rngs = RunGenerators.from_rng(7, n_runs=3)
    >>> rngs.random((4,)).shape, rngs.permutations(5).shape
    ((3, 4), (3, 5))
    >>> solo = RunGenerators.from_rng(7, n_runs=1)
    >>> bool((RunGenerators.from_rng(7, n_runs=3).random(2)[0] == solo.random(2)[0]).all())
    True
    """

    __slots__ = ("_gens",)

    def __init__(self, generators: Iterable[np.random.Generator]) -> None:
        gens = tuple(generators)
        if not gens:
            raise ValueError("RunGenerators needs at least one generator (n_runs >= 1)")
        for i, g in enumerate(gens):
            if not isinstance(g, np.random.Generator):
                raise TypeError(
                    f"generator {i} must be a numpy.random.Generator, got {type(g).__name__}"
                )
        self._gens = gens

    # -- construction -------------------------------------------------------

    @classmethod
    def from_rng(cls, rng: RunRNGLike, n_runs: int) -> RunGenerators:
        """Per-run generators from one seed-like value, or from ``n_runs`` generators.

        A seed (None, int or SeedSequence) gives run ``b`` the child
        ``SeedSequence(entropy, spawn_key=(..., b))``, so run ``b`` is the same
        for every ``n_runs > b``. A Generator or BitGenerator is spawned into
        ``n_runs`` children (it advances its spawn counter). A
        :class:`RunGenerators` or a sequence of Generators is used as is and
        must hold exactly ``n_runs`` generators.
        """
        n = check_n_runs(n_runs)
        if isinstance(rng, RunGenerators):
            gens: tuple[np.random.Generator, ...] = rng._gens
        elif isinstance(rng, Sequence) and not isinstance(rng, str | bytes):
            gens = tuple(rng)
        elif isinstance(rng, np.random.Generator):
            gens = tuple(rng.spawn(n))
        elif isinstance(rng, np.random.BitGenerator):
            gens = tuple(np.random.Generator(rng).spawn(n))
        elif isinstance(rng, bool):
            raise TypeError("rng must be a seed, a Generator or per-run Generators, got bool")
        elif rng is None or isinstance(rng, int | np.integer | np.random.SeedSequence):
            ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
            gens = tuple(
                np.random.default_rng(
                    np.random.SeedSequence(
                        ss.entropy, spawn_key=(*ss.spawn_key, b), pool_size=ss.pool_size
                    )
                )
                for b in range(n)
            )
        else:
            raise TypeError(
                "rng must be None, an int, a SeedSequence, a (Bit)Generator or a "
                f"sequence of Generators, got {type(rng).__name__}"
            )
        if len(gens) != n:
            raise ValueError(f"got {len(gens)} generators for n_runs={n}; pass one per run")
        return cls(gens)

    @classmethod
    def from_keys(cls, root: int, *keys: int | str, reps: Sequence[int]) -> RunGenerators:
        """``child_rng(root, *keys, rep)`` for each rep: streams named by stable keys."""
        if len(reps) == 0:
            raise ValueError("reps must name at least one repetition")
        return cls(child_rng(root, *keys, int(r)) for r in reps)

    # -- sequence protocol --------------------------------------------------

    @property
    def n_runs(self) -> int:
        """Number of runs ``B``."""
        return len(self._gens)

    def __len__(self) -> int:
        return len(self._gens)

    @overload
    def __getitem__(self, index: int) -> np.random.Generator: ...

    @overload
    def __getitem__(self, index: slice) -> RunGenerators: ...

    def __getitem__(self, index: int | slice) -> np.random.Generator | RunGenerators:
        if isinstance(index, slice):
            return RunGenerators(self._gens[index])
        return self._gens[index]

    def __iter__(self) -> Iterator[np.random.Generator]:
        return iter(self._gens)

    def __repr__(self) -> str:
        return f"RunGenerators(n_runs={self.n_runs})"

    # -- stacked draws --------------------------------------------------------

    def map(self, draw: Callable[[np.random.Generator], ArrayLike]) -> NDArray[Any]:
        """Stack ``draw(generator)`` over runs: any per-run draw, shape (B, ...)."""
        return np.stack([np.asarray(draw(g)) for g in self._gens])

    def random(self, shape: _Shape = ()) -> FloatArray:
        """Uniform [0, 1) floats of shape (B, *shape)."""
        gens, s = self._gens, _shape(shape)
        if len(gens) == 1 and s:  # one run: the same numbers, in one call
            return gens[0].random((1, *s))
        if not s:
            return self.map(lambda g: g.random())
        out = np.empty((self.n_runs, *s))
        for g, row in zip(gens, out, strict=True):
            g.random(out=row)  # the same numbers as g.random(shape), without a stack
        return out

    def uniform(self, low: float = 0.0, high: float = 1.0, shape: _Shape = ()) -> FloatArray:
        """Uniform [low, high) floats of shape (B, *shape)."""
        s = _shape(shape)
        return self.map(lambda g: g.uniform(low, high, s))

    def standard_normal(self, shape: _Shape = ()) -> FloatArray:
        """Standard normal floats of shape (B, *shape)."""
        s = _shape(shape)
        if not s:
            return self.map(lambda g: g.standard_normal())
        out = np.empty((self.n_runs, *s))
        for g, row in zip(self._gens, out, strict=True):
            g.standard_normal(out=row)  # the same numbers as g.standard_normal(shape)
        return out

    def normal(self, loc: float = 0.0, scale: float = 1.0, shape: _Shape = ()) -> FloatArray:
        """Normal floats of shape (B, *shape)."""
        s = _shape(shape)
        return self.map(lambda g: g.normal(loc, scale, s))

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, shape: _Shape = ()) -> FloatArray:
        """Gumbel floats of shape (B, *shape) (the Plackett–Luce / FPL noise)."""
        s = _shape(shape)
        return self.map(lambda g: g.gumbel(loc, scale, s))

    def exponential(self, scale: float = 1.0, shape: _Shape = ()) -> FloatArray:
        """Exponential floats of shape (B, *shape)."""
        s = _shape(shape)
        return self.map(lambda g: g.exponential(scale, s))

    def integers(self, low: int, high: int | None = None, shape: _Shape = ()) -> NDArray[np.int64]:
        """Integers in [low, high) (or [0, low) when high is None), shape (B, *shape)."""
        s = _shape(shape)
        return self.map(lambda g: g.integers(low, high, s, dtype=np.int64))

    def permutations(self, n_items: int) -> NDArray[np.intp]:
        """One uniformly random order of ``n_items`` items per run, shape (B, n_items)."""
        m = int(n_items)
        return self.map(lambda g: g.permutation(m)).astype(np.intp, copy=False)


# ---------------------------------------------------------------------------
# keyword-only parameters, river/sklearn style


class Configurable:
    """Base of learners, environments and feedback models: parameters by signature.

    Subclasses take keyword-only parameters in ``__init__`` and store each one,
    unmodified, under its own name (scikit-learn's rule). :meth:`get_params`,
    :meth:`__repr__` and cloning then come from :func:`inspect.signature`, as in
    river's ``Base``. Names listed in ``_reserved`` (runtime arguments such as
    ``rng`` or ``n_runs``) are not parameters.
    """

    _reserved: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            return
        for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
            if p.kind is not inspect.Parameter.KEYWORD_ONLY:
                raise TypeError(
                    f"{cls.__name__}.__init__ must take keyword-only parameters "
                    f"(put them after '*'); {p.name!r} is {p.kind.description}"
                )

    @classmethod
    def _param_names(cls) -> tuple[str, ...]:
        return tuple(p for p in inspect.signature(cls).parameters if p not in cls._reserved)

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters, as stored (runtime arguments excluded)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
