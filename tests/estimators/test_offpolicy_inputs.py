"""Bad input to the off-policy estimators gets a clear error naming what and where."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from oltr.errors import InputError
from oltr.estimators.loggedlists import logged_lists, metric_rewards, pad_lists
from oltr.estimators.offpolicy import cascade_dr, ips, pbm_ips, snips

SHOWN = np.array([[0, 1, 2], [2, 0, 1]])
CLICKS = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
LOG = logged_lists(SHOWN, CLICKS)
P0 = np.array([0.2, 0.1])
PE = np.array([1.0, 0.0])
M0 = np.full((2, 3), 0.3)
ME = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])


def test_metric_rewards_follow_their_definitions() -> None:
    log = logged_lists(np.array([[0, 1, 2]]), np.array([[0.0, 1.0, 1.0]]))
    assert metric_rewards(log, "clicks").tolist() == [[0.0, 1.0, 1.0]]
    assert metric_rewards(log, "clicks@2").tolist() == [[0.0, 1.0, 0.0]]
    assert metric_rewards(log, "ctr@3").tolist() == [[0.0, 1.0, 0.0]]  # the first click only
    assert metric_rewards(log, "dcg@3")[0].tolist() == pytest.approx([0.0, 1 / np.log2(3), 0.5])


def test_ips_and_snips_by_hand() -> None:
    """Weights 5 and 0, rewards 1 and 1: IPS = (5·1 + 0)/2, SNIPS = 5·1/5."""
    assert ips(LOG, logging_prob=P0, target_prob=PE, interval="normal").value == 2.5
    assert snips(LOG, logging_prob=P0, target_prob=PE, interval="normal").value == 1.0


LOG_ERRORS: list[tuple[Callable[[], object], str]] = [
    (lambda: logged_lists(SHOWN, CLICKS[:, :2]), "shown has shape"),
    (lambda: logged_lists(SHOWN[0], CLICKS[0]), "must be 2-D"),
    (lambda: logged_lists(np.zeros((0, 3), dtype=int), np.zeros((0, 3))), "empty"),
    (lambda: logged_lists(SHOWN, np.where(CLICKS == 1, np.nan, 0)), r"clicks\[0, 0\] is nan"),
    (lambda: logged_lists(SHOWN, CLICKS * 2), "outside"),
    (lambda: logged_lists(SHOWN.astype(float), CLICKS), "integer"),
    (lambda: logged_lists(np.array([[0, -1, 2]]), np.zeros((1, 3))), "mask row 0"),
    (lambda: pad_lists([[0, 1]], [[0, 1, 0]]), "impression 0"),
    (lambda: logged_lists(np.array([[0, 2, 0]]), np.zeros((1, 3))), "same item twice"),
    (lambda: pad_lists([], []), "empty"),
    (lambda: metric_rewards(LOG, "ndcg@3"), "unknown metric"),
    (lambda: metric_rewards(LOG, "dcg@0"), "positive integer"),
]
ESTIMATOR_ERRORS: list[tuple[Callable[[], object], str]] = [
    (lambda: ips(LOG, logging_prob=P0[:1], target_prob=PE[:1]), "logging_prob has shape"),
    (lambda: ips(LOG, logging_prob=P0, target_prob=np.ones((2, 3))), "must agree"),
    (
        lambda: ips(LOG, logging_prob=np.array([0.2, 0.0]), target_prob=PE),
        r"logging_prob\[1\] is 0 for a logged list",
    ),
    (lambda: ips(LOG, logging_prob=np.array([0.2, np.nan]), target_prob=PE), "NaN"),
    (lambda: ips(LOG, logging_prob=P0, target_prob=np.array([1.5, 0.0])), "not a probability"),
    (lambda: ips(LOG, logging_prob=P0, target_prob=PE, interval="wald"), "unknown interval"),
    (lambda: snips(LOG, logging_prob=P0, target_prob=np.zeros(2)), "Σ w = 0"),
    (
        lambda: snips(LOG, logging_prob=P0, target_prob=PE, interval="bernstein"),
        "known range",
    ),
    (
        lambda: pbm_ips(LOG, "ctr@2", logging_marginals=M0, target_marginals=ME),
        "not additive",
    ),
    (
        lambda: pbm_ips(LOG, logging_marginals=np.where(ME == 1, 0.0, M0), target_marginals=ME),
        r"logging_marginals\[0, 0\] is 0",
    ),
    (
        lambda: pbm_ips(LOG, logging_marginals=M0[:, :2], target_marginals=ME),
        "logging_marginals has shape",
    ),
    (
        lambda: cascade_dr(
            LOG,
            logging_prefix_prob=M0,
            target_prefix_prob=ME,
            q_logged=np.zeros((2, 2)),
            q_target=np.zeros((2, 3)),
        ),
        "q_logged has shape",
    ),
    (
        lambda: cascade_dr(
            LOG,
            logging_prefix_prob=M0,
            target_prefix_prob=ME,
            q_logged=np.zeros((2, 3)),
            q_target=np.full((2, 3), np.inf),
        ),
        "q_target",
    ),
    (
        lambda: ips(LOG, logging_prob=P0, target_prob=PE, interval="bernstein", weight_max=-1.0),
        "weight_max",
    ),
]


@pytest.mark.parametrize(("call", "message"), LOG_ERRORS + ESTIMATOR_ERRORS)
def test_bad_input_is_refused_with_a_clear_error(call: Callable[[], object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        call()
