import numpy as np

from oltr.feedback import FeedbackRequirement, TopKFeedback
from oltr.learners import Learner
from oltr.permutations import order_from_scores
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_scalar


@register_learner("top1-greedy")
class Top1Greedy(Learner[TopKFeedback]):
    """Puts the item with the best top-1 average first; explores with probability eps."""

    requires = FeedbackRequirement("topk", k=1)  # sees only the top item's grade
    context_kind = "items"

    def __init__(self, *, eps: float = 0.1, n_runs: int = 1, rng: RunRNGLike = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self.eps = check_scalar(eps, "eps", low=0, high=1)  # stored unmodified
        self._sum: FloatArray | None = None
        self._count: FloatArray | None = None

    def rank(self, context: Context) -> Orders:
        if self._sum is None or self._count is None:  # state is (B, m): one row per run
            self._sum = np.zeros((self.n_runs, context.n_items))
            self._count = np.ones((self.n_runs, context.n_items))
        explore = self.rngs.random() < self.eps  # (B,), each run from its own stream
        noise = self.rngs.random((context.n_items,))
        means = self._sum / self._count
        return order_from_scores(np.where(explore[:, None], noise, means))

    def update(self, context: Context, orders: Orders, feedback: TopKFeedback) -> None:
        assert self._sum is not None and self._count is not None  # rank() came first
        top = orders[:, 0]
        self._sum[self.run_index, top] += feedback.labels[:, 0]
        self._count[self.run_index, top] += 1
