"""Saturation: a metric whose value lies inside or below its real-vs-real interval no longer ranks.
The rule itself over generated values; BestKeeper over generated sequences of evaluations (a
saturated metric never selects again, the SWD takes over from the FID, the last generator is kept
when both have saturated, and a resume continues with the same metric); the trainer's log, its
score.json and its closing line on scripted evaluations."""

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gan_accel.engine import BestKeeper
from gan_accel.gan import photo_run
from gan_accel.loop.state import TrainState
from gan_accel.metrics.result import EvalResult, format_result, is_saturated
from helpers import TINY_GAN, load_script, read_jsonl

finite = st.floats(0.0, 10.0)
maybe = st.one_of(finite, st.just(math.nan), st.just(math.inf))


@settings(max_examples=300, deadline=None)
@given(maybe, st.one_of(st.none(), finite), st.one_of(st.none(), st.tuples(finite, finite)))
def test_saturated_exactly_when_the_value_is_not_above_the_real_vs_real_interval(value, floor, interval):
    interval = sorted(interval) if interval else None
    top = interval[1] if interval else floor
    expected = math.isfinite(value) and top is not None and value <= top
    assert is_saturated(value, floor, interval) == expected
    if expected and interval:  # anything at or below the top, inside or below the interval, is
        assert is_saturated(interval[1], floor, interval) and is_saturated(interval[0] / 2, floor, interval)


def result(fid, swd, fid_top=1.0, swd_top=20.0, kid=1.0, fid_at_size=None, kid_at_size=None):
    """A scripted evaluation; the values at the floor's size (what saturation judges) default to a
    little above the full-size ones, as FID and KID are at a smaller size."""
    r = EvalResult(
        fid=fid,
        kid_mean=kid,
        kid_std=0.0,
        fid_floor=fid_top * 0.9,
        kid_floor_mean=0.0,
        kid_floor_std=0.0,
        num_generated=100,
        num_reference=100,
        num_floor=100,
        feature_extractor="domain",
        fid_at_floor_size=fid + 0.1 if fid_at_size is None else fid_at_size,
        kid_at_floor_size_mean=kid + 0.01 if kid_at_size is None else kid_at_size,
        swd=swd,
        swd_floor=swd_top * 0.9,
        intervals={"fid": [fid * 0.95, fid * 1.05], "kid": [kid, kid], "swd": [swd * 0.95, swd * 1.05]},
        floor_intervals={"fid": [fid_top * 0.8, fid_top], "kid": [-0.1, 0.1], "swd": [swd_top * 0.8, swd_top]},
    )
    r.mark_saturated()
    return r


def test_a_result_below_its_floor_says_so_in_its_keys_and_its_panel():
    r = result(fid=0.49, swd=40.0)
    assert r.saturated == ["fid"]
    flat = r.flat()
    assert (
        flat["eval/fid_saturated"] == 1.0 and flat["eval/swd_saturated"] == 0.0 and flat["eval/kid_saturated"] == 0.0
    )
    assert flat["eval/swd_floor_ci_high"] == 20.0 and flat["eval/fid_floor_ci_low"] == 0.8
    panel = format_result(r)
    assert "FID 0.49 [0.4655, 0.5145]  floor 0.9 [0.8, 1]  at floor size 0.59  SATURATED" in panel
    assert "SWD 40 [38, 42]  floor 18 [16, 20]  separates" in panel  # the SWD is at the floor's size already


def test_saturation_judges_the_value_at_the_floor_size_not_the_full_size_one():
    # FID and KID run higher at the floor's smaller size: a full-size value under the interval's top
    # says nothing by itself, the same-size one decides (both ways).
    assert result(fid=0.5, swd=40.0, fid_at_size=1.5).saturated == []
    assert result(fid=1.5, swd=40.0, fid_at_size=0.5).saturated == ["fid"]
    assert result(fid=2.0, swd=40.0, kid=0.05, kid_at_size=0.2).saturated == []
    assert result(fid=2.0, swd=40.0, kid=0.2, kid_at_size=0.05).saturated == ["kid"]
    flat = result(fid=0.5, swd=40.0, fid_at_size=1.5).flat()
    assert flat["eval/fid_saturated"] == 0.0 and flat["eval/fid_at_floor_size"] == 1.5


KEYS = photo_run.SELECTING
# One evaluation: FID and SWD values, how deep each interval reaches below its value, and whether each is saturated.
evaluation = st.tuples(maybe, st.floats(0.0, 1.0), st.booleans(), maybe, st.floats(0.0, 1.0), st.booleans())


def metrics_of(fid, fid_depth, fid_sat, swd, swd_depth, swd_sat):
    m = {"eval/fid": fid, "eval/swd": swd, "eval/fid_saturated": float(fid_sat), "eval/swd_saturated": float(swd_sat)}
    for key, value, depth in (("eval/fid", fid, fid_depth), ("eval/swd", swd, swd_depth)):
        m[f"{key}_ci_low"] = value * depth if math.isfinite(value) else value
    return m


def expected_exports(evals):
    """The rule, written out apart from BestKeeper: (step, choosing key or None) of each export."""
    retired, key, best, kept, out = set(), KEYS[0], math.nan, {}, []
    for step, m in enumerate(evals):
        retired |= {k for k in KEYS if m[f"{k}_saturated"] == 1.0}
        want = next((k for k in KEYS if k not in retired), None)
        if want != key:
            key, best = want, kept.get(want, math.nan) if want else math.nan
        if key is None:
            export = all(math.isfinite(m[k]) for k in KEYS)
        else:
            value, low = m[key], m[f"{key}_ci_low"]
            better = math.isfinite(value) and (math.isnan(best) or value < best)
            export = better or (math.isfinite(value) and math.isfinite(low) and low <= best)
            best = value if better else best
        if export:
            out.append((step, key))
            kept = {k: m[k] for k in KEYS if math.isfinite(m[k])}
    return out


def keeper_over(state, exported):
    def export(metrics):
        exported.append((metrics["step"], keeper.selecting))

    keeper = BestKeeper(
        state,
        KEYS[0],
        False,
        export,
        ties=photo_run.ties_best,
        fallbacks=KEYS[1:],
        saturated=photo_run.saturated_keys,
    )
    return keeper


@settings(max_examples=300, deadline=None)
@given(st.lists(evaluation, min_size=1, max_size=12), st.integers(0, 12))
def test_a_saturated_metric_never_chooses_and_a_resume_continues_the_choice(evals, cut):
    evals = [dict(metrics_of(*e), step=step) for step, e in enumerate(evals)]
    exported, state = [], TrainState()
    keeper = keeper_over(state, exported)
    first_seen = {}
    for m in evals:
        state.step = m["step"]
        if m["step"] == cut:  # a resume: the state through JSON (as a checkpoint stores it), a new keeper
            state = TrainState.from_dict(json.loads(json.dumps(state.to_dict())))
            keeper = keeper_over(state, exported)
        keeper.update(m)
        for k in photo_run.saturated_keys(m):
            first_seen.setdefault(k, m["step"])
        assert keeper.selecting not in state.saturated  # a saturated metric never chooses again
    assert exported == expected_exports(evals)
    assert state.saturated == first_seen
    for step, key in exported:  # never a non-finite value
        assert all(math.isfinite(evals[step][k]) for k in ([key] if key else KEYS))


def test_a_checkpoint_from_before_saturation_loads_and_chooses_by_fid():
    old = {"step": 7, "best_metric": 0.8}  # trainer_state.json of an older checkpoint
    state = TrainState.from_dict(old)
    assert (state.best_key, state.best_values, state.saturated) == ("", {}, {})
    exported = []
    keeper = keeper_over(state, exported)
    assert keeper.selecting == "eval/fid"
    keeper.update(dict(metrics_of(0.9, 1.0, False, 30.0, 1.0, False), step=8))
    assert exported == [] and state.best_metric == 0.8


class ScriptedEvaluator:
    """Stands in for GANEvaluator: the results of a script, one per evaluation."""

    def __init__(self, results):
        self.results = list(results)

    def evaluate_full(self, G):
        return self.results.pop(0)


def run_scripted(tmp_path, monkeypatch, results):
    from gan_accel.gan.trainer import GANTrainer

    monkeypatch.setattr(GANTrainer, "build_evaluator", lambda self: ScriptedEvaluator(results))
    out = tmp_path / "run"
    train_gan = load_script("train_gan").main
    assert train_gan([*TINY_GAN, "--output_dir", str(out), "--max_steps", "6", "--eval_every", "2"]) == 0
    return out


def test_the_fid_saturates_and_the_swd_chooses(tmp_path, monkeypatch, capsys):
    # Step 2: FID 2.0 chooses. Step 4: FID 0.5, under its floor: saturated; the SWD takes over from
    # the kept generator's SWD (50): 45 is better. Step 6: FID lower still, SWD 60 worse: step 4 stays.
    out = run_scripted(tmp_path, monkeypatch, [result(2.0, 50.0), result(0.5, 45.0), result(0.4, 60.0)])
    printed = capsys.readouterr().out
    assert printed.count("FID saturated:") == 1  # once, though steps 4 and 6 are both saturated
    assert (
        "step 4: FID saturated: 0.6 (at the floor's size; 0.5 at full size) is inside or below its real-vs-real "
        "interval [0.8, 1] (floor 0.9): it no longer tells generated from real images; best_generator/ is chosen "
        "by SWD from here" in printed
    )
    score = json.loads((out / "best_generator" / "score.json").read_text())
    assert score == {"metric": "eval/swd", "value": 45.0, "step": 4, "saturated": {"eval/fid": 4}}
    assert (
        "best_generator/ = step 4, chosen by SWD (FID saturated at step 4: inside or below its real-vs-real interval)"
        in printed
    )
    evals = [r for r in read_jsonl(out / "metrics.jsonl") if "eval/fid" in r]
    assert [r["eval/fid_saturated"] for r in evals] == [0.0, 1.0, 1.0]
    assert [r.get("eval/best_step") for r in evals] == [2.0, 4.0, None]
    assert evals[-1]["eval/best_swd"] == 45.0 and "eval/best_fid" not in evals[-1]
    state = json.loads((out / "checkpoints" / "step_00000006" / "trainer_state.json").read_text())["state"]
    assert (state["best_key"], state["best_metric"], state["saturated"]) == ("eval/swd", 45.0, {"eval/fid": 4})
    assert (out / "plots" / "eval_fid.png").is_file()
    # eval_results.json holds the latest evaluation, what selects since and when each metric saturated.
    latest = json.loads((out / "eval_results.json").read_text())
    assert (latest["step"], latest["fid"], latest["saturated"]) == (6, 0.4, ["fid"])
    assert (latest["selecting"], latest["saturated_since"], latest["newly_saturated"]) == (
        "eval/swd",
        {"eval/fid": 4},
        [],
    )


def test_when_both_saturate_the_last_generator_is_kept_and_the_closing_line_says_so(tmp_path, monkeypatch, capsys):
    out = run_scripted(tmp_path, monkeypatch, [result(2.0, 50.0), result(0.5, 45.0), result(0.4, 15.0)])
    printed = capsys.readouterr().out
    assert (
        "step 6: SWD saturated: 15 (at the floor's size) is inside or below its real-vs-real interval [16, 20]"
        in printed
    )
    assert "best_generator/ keeps the last generator" in printed
    score = json.loads((out / "best_generator" / "score.json").read_text())
    assert score == {"metric": "last", "value": None, "step": 6, "saturated": {"eval/fid": 4, "eval/swd": 6}}
    assert (
        "best_generator/ = step 6, the last generator: no metric separates generated from real images any more "
        "(FID saturated at step 4, SWD saturated at step 6: each inside or below its real-vs-real interval)" in printed
    )
    latest = json.loads((out / "eval_results.json").read_text())
    assert (latest["selecting"], latest["saturated_since"], latest["newly_saturated"]) == (
        "last",
        {"eval/fid": 4, "eval/swd": 6},
        ["eval/swd"],
    )
