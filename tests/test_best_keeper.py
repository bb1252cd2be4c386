"""BestKeeper over generated sequences of evaluations: the lowest value is remembered, a tie (the
lowest value inside a later evaluation's interval) exports the later model, and nothing else does."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gan_accel.engine import BestKeeper
from gan_accel.gan.photo_run import ties_best
from gan_accel.loop.state import TrainState

values = st.one_of(st.floats(0.01, 10.0), st.just(math.nan), st.just(math.inf))
evaluation = st.tuples(values, st.floats(0.0, 1.0), st.booleans())  # FID, interval's depth, has interval


def metrics_of(fid, depth, has_interval):
    m = {"eval/fid": fid}
    if has_interval:
        m["eval/fid_ci_low"] = fid * depth if math.isfinite(fid) else fid
    return m


@settings(max_examples=300, deadline=None)
@given(st.lists(evaluation, min_size=1, max_size=12))
def test_the_export_follows_the_lowest_value_and_its_ties(evals):
    exported = []
    keeper = BestKeeper(TrainState(), "eval/fid", False, exported.append, ties=ties_best)
    lowest, expected = math.inf, []
    for step, e in enumerate(evals):
        m = dict(metrics_of(*e), step=step)
        kept = keeper.update(m)
        fid, low = m["eval/fid"], m.get("eval/fid_ci_low")
        finite = math.isfinite(fid)
        should = finite and (fid < lowest or (low is not None and math.isfinite(low) and low <= lowest))
        assert kept == should
        if should:
            expected.append(step)
        if finite:
            lowest = min(lowest, fid)
        # best_metric is the lowest finite value seen, never a tie's higher one
        best = keeper.state.best_metric
        assert (best is None or math.isnan(best)) if lowest == math.inf else best == lowest
    assert [m["step"] for m in exported] == expected


def test_without_ties_a_worse_evaluation_is_never_exported():
    exported = []
    keeper = BestKeeper(TrainState(), "eval/fid", False, exported.append)
    for fid in (1.0, 1.1, 0.9, 0.95):
        keeper.update({"eval/fid": fid, "eval/fid_ci_low": 0.0})
    assert [m["eval/fid"] for m in exported] == [1.0, 0.9]


def test_ties_best():
    assert ties_best({"eval/fid": 0.305, "eval/fid_ci_low": 0.162}, "eval/fid", 0.284)  # the run that prompted it
    assert not ties_best({"eval/fid": 0.5, "eval/fid_ci_low": 0.3}, "eval/fid", 0.284)
    assert not ties_best({"eval/fid": 0.5}, "eval/fid", 0.284)  # no interval: no tie
    assert not ties_best({"eval/fid": 0.5, "eval/fid_ci_low": math.nan}, "eval/fid", 0.284)
    assert ties_best({"eval/swd": 30.0, "eval/swd_ci_low": 19.0, "eval/fid_ci_low": 9.0}, "eval/swd", 20.0)
