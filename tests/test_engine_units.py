"""The engine's pure parts: recipe validation, the prepare plan per strategy (strategy faked), the
update function, phase intervals."""

import pytest
import torch
import torch.nn as nn
from accelerate.utils import DistributedType
from hypothesis import given, settings
from hypothesis import strategies as st

from gan_accel.engine import (
    PER_NETWORK,
    SINGLE_CALL,
    Network,
    Optimizer,
    Phase,
    Recipe,
    adam,
    plan_for,
    prepare_recipe,
)
from gan_accel.errors import ConfigError


def loss(step):
    return torch.zeros(()), {}


def recipe(shared: bool = False, frozen_net: bool = True) -> Recipe:
    nets = [
        Network("G_AB", nn.Linear(2, 2), "G"),
        Network("G_BA", nn.Linear(2, 2), "G" if shared else "G2"),
        Network("D", nn.Linear(2, 1), "D"),
    ]
    if frozen_net:
        nets.append(Network("teacher", nn.Linear(2, 2)))
    opts = [Optimizer("G", adam(1e-3)), *([] if shared else [Optimizer("G2", adam(1e-3))]), Optimizer("D", adam(1e-3))]
    g_trains = ["G_AB", "G_BA"]
    return Recipe(
        nets,
        opts,
        [Phase("G", g_trains, loss, frozen=["D"]), Phase("D", ["D"], loss, every=2, offset=1)],
        progress="G",
    )


class FakeAccelerator:
    """Records the prepare calls; FSDP2's rule (one model per call, with its optimizer) enforced."""

    def __init__(self, kind, fsdp2=False):
        self.distributed_type, self.is_fsdp2, self.calls = kind, fsdp2, []

    def prepare(self, *objs):
        models = [o for o in objs if isinstance(o, nn.Module)]
        if self.is_fsdp2 and len(models) > 1:
            raise ValueError("Only one model is supported when using FSDP2")
        self.calls.append([type(o).__name__ for o in objs])
        return objs if len(objs) > 1 else objs[0]

    def prepare_model(self, model, evaluation_mode=False):
        self.calls.append(["eval:" + type(model).__name__])
        return model


def raw(r):
    opts = {o.name: o.make([r.network(n).module for n in r.networks_of(o.name)]) for o in r.optimizers}
    return opts, {k: torch.optim.lr_scheduler.LambdaLR(v, lambda _: 1.0) for k, v in opts.items()}


def test_single_device_and_ddp_prepare_everything_in_one_call():
    r = recipe(shared=True)
    acc = FakeAccelerator(DistributedType.MULTI_GPU)
    out = prepare_recipe(acc, r, *raw(r), loaders=["loader"])
    assert out.plan == SINGLE_CALL and len(acc.calls) == 2
    assert acc.calls[0] == ["Linear"] * 3 + ["Adam"] * 2 + ["LambdaLR"] * 2 + ["str"]
    assert acc.calls[1] == ["eval:Linear"] and out.model_order == ["G_AB", "G_BA", "D", "teacher"]
    assert not any(p.requires_grad for p in r.network("teacher").module.parameters())


def test_fsdp2_prepares_one_network_with_its_optimizer_per_call():
    r = recipe(shared=False)
    acc = FakeAccelerator(DistributedType.FSDP, fsdp2=True)
    out = prepare_recipe(acc, r, *raw(r), loaders=["loader"])
    assert plan_for(acc) == PER_NETWORK == out.plan
    assert acc.calls == [["Linear", "Adam", "LambdaLR"]] * 3 + [["str"], ["eval:Linear"]]
    assert out.model_order == ["G_AB", "G_BA", "D", "teacher"] and set(out.optimizers) == {"G", "G2", "D"}


def test_fsdp2_refuses_an_optimizer_shared_by_two_networks():
    r = recipe(shared=True)
    with pytest.raises(
        ConfigError, match=r"FSDP2 prepares one network per optimizer; optimizer 'G' updates \['G_AB', 'G_BA'\]"
    ):
        prepare_recipe(FakeAccelerator(DistributedType.FSDP, fsdp2=True), r, *raw(r), loaders=[])


@pytest.mark.parametrize("kind,fsdp2", [(DistributedType.DEEPSPEED, False), (DistributedType.FSDP, False)])
def test_deepspeed_and_fsdp1_are_refused_naming_the_supported_strategies(kind, fsdp2):
    with pytest.raises(ConfigError) as info:
        plan_for(FakeAccelerator(kind, fsdp2))
    message = str(info.value)
    assert "\n" not in message and "FSDP2" in message and "DDP" in message


@pytest.mark.parametrize(
    "change,match",
    [
        (lambda r: r.networks.append(Network("X", nn.Linear(1, 1), "nope")), "unknown optimizer 'nope'"),
        (lambda r: r.phases.append(Phase("H", ["G_AB"], loss)), r"also updates \['G_BA'\]: list them in trains"),
        (lambda r: r.phases.append(Phase("T", ["teacher"], loss)), "trains 'teacher', which has no optimizer"),
        (lambda r: r.phases.append(Phase("R", ["D"], loss, every=4, offset=4)), "0 <= offset < every"),
        (lambda r: setattr(r, "progress", "E"), "progress optimizer 'E'"),
    ],
)
def test_recipe_validation_names_the_problem(change, match):
    r = recipe(shared=True)
    change(r)
    with pytest.raises(ConfigError, match=match):
        Recipe(r.networks, r.optimizers, r.phases, r.progress)


def test_phase_intervals():
    lazy = Phase("R1", ["D"], loss, every=4)
    g_after_n_critic = Phase("G", ["G"], loss, every=3, offset=2)
    assert [w for w in range(9) if lazy.runs_in(w)] == [0, 4, 8]
    assert [w for w in range(9) if g_after_n_critic.runs_in(w)] == [2, 5, 8]


def test_shared_optimizer_holds_every_parameter_of_its_networks():
    r = recipe(shared=True)
    opts, _ = raw(r)
    params = {id(p) for g in opts["G"].param_groups for p in g["params"]}
    assert params == {id(p) for n in ("G_AB", "G_BA") for p in r.network(n).module.parameters()}


def test_a_gan_checkpoint_from_before_per_optimizer_counters_resumes_its_counters():
    from gan_accel.loop.state import TrainState

    state = TrainState.from_dict({"step": 5, "micro_step": 20, "d_updates": 10, "epoch": 1})
    assert state.updates == {"D": 10, "G": 5} and state.windows == 10 and state.step == 5


def test_random_streams_never_share_a_seed_and_refuse_unknown_names():
    from types import SimpleNamespace

    from gan_accel.engine import RandomStreams
    from gan_accel.errors import ConfigError

    acc = SimpleNamespace(device=torch.device("cpu"), num_processes=1, process_index=0)
    names = [f"s{i}" for i in range(12)]  # more streams than the old 8 purposes: no seed of step t+1 is reused
    streams = RandomStreams(names, 0, acc, 2)
    seeds = {streams._seeded(name, t).initial_seed() for name in names for t in range(5)}
    assert len(seeds) == 12 * 5
    with pytest.raises(ConfigError, match="no stream 'z'"):
        streams.normal("z", 0, 3)
    with pytest.raises(ConfigError, match="duplicate"):
        RandomStreams({"a": 1, "b": 1}, 0, acc, 2)
    kept = RandomStreams({"crop_A": 5, "crop_B": 6}, 0, acc, 2)  # CycleGAN's positions: its seeds as before
    assert kept._seeded("crop_B", 3).initial_seed() == (0 * 1_000_003 + 3) * 8 + 6
    from gan_accel.gan.recipe import STREAMS

    gan = RandomStreams(STREAMS, 0, acc, 2)  # the built-in GAN's positions: the seeds of its recorded runs
    assert gan._seeded("recon", 4).initial_seed() == (0 * 1_000_003 + 4) * 8 + 5


def test_random_streams_seed_each_stream_by_its_name_across_objects():
    """Two objects with the same seed (a recipe's and a hook's, two tasks): a stream's draws depend
    on its name, not on its position, so names at the same position never draw the same values
    and a stream added before another moves none of its draws."""
    from types import SimpleNamespace

    from gan_accel.engine import RandomStreams

    acc = SimpleNamespace(device=torch.device("cpu"), num_processes=1, process_index=0)
    recipe, hook = RandomStreams(("z",), 5, acc, 4), RandomStreams(("noise",), 5, acc, 4)
    assert not torch.equal(recipe.normal("z", 3, 2), hook.normal("noise", 3, 2))
    assert not torch.equal(recipe.uniform("z", 3), hook.uniform("noise", 3))
    assert not torch.equal(recipe.categorical("z", 3, 1000), hook.categorical("noise", 3, 1000))
    moved = RandomStreams(("extra", "z"), 5, acc, 4)
    assert torch.equal(recipe.normal("z", 3, 2), moved.normal("z", 3, 2))
    assert not torch.equal(recipe.normal("z", 3, 2), RandomStreams(("z",), 6, acc, 4).normal("z", 3, 2))


@pytest.mark.parametrize("draw", ["normal", "uniform", "categorical"])
def test_random_streams_give_each_rank_its_rows_of_the_one_process_draw(draw):
    """What docs/engine.md promises for every draw: 2 processes of batch 3 get rows 0-2 and 3-5 of
    what one process of batch 6 draws, and a fresh object (a resumed run) draws it again."""
    from types import SimpleNamespace

    from gan_accel.engine import RandomStreams

    def streams(world, rank, batch):
        acc = SimpleNamespace(device=torch.device("cpu"), num_processes=world, process_index=rank)
        return RandomStreams(("z", "code"), 7, acc, batch)

    args = (10, 2) if draw == "categorical" else (2,)  # categorical: 10 classes, shape [batch, 2]
    one = getattr(streams(1, 0, 6), draw)("code", 5, *args)
    ranks = [getattr(streams(2, r, 3), draw)("code", 5, *args) for r in (0, 1)]
    assert one.shape == (6, 2) and all(r.shape == (3, 2) for r in ranks)
    assert torch.equal(torch.cat(ranks), one)
    assert torch.equal(getattr(streams(1, 0, 6), draw)("code", 5, *args), one)
    assert not torch.equal(getattr(streams(1, 0, 6), draw)("code", 6, *args), one)  # the next step differs
    if draw == "categorical":
        assert one.dtype == torch.int64 and 0 <= int(one.min()) and int(one.max()) < 10


def test_random_streams_categorical_covers_every_class_and_refuses_none():
    from types import SimpleNamespace

    from gan_accel.engine import RandomStreams

    acc = SimpleNamespace(device=torch.device("cpu"), num_processes=1, process_index=0)
    streams = RandomStreams(("c",), 0, acc, 4000)
    counts = torch.bincount(streams.categorical("c", 0, 10), minlength=10)
    assert counts.shape == (10,) and int(counts.min()) > 300  # uniform: ~400 each
    assert streams.categorical("c", 0, 10, 3, 2).shape == (4000, 3, 2)
    with pytest.raises(ConfigError, match="num_classes >= 1"):
        streams.categorical("c", 0, 0)


@settings(max_examples=60, deadline=None)
@given(
    verdicts=st.lists(st.tuples(st.booleans(), st.booleans()), max_size=40),
    fold_every=st.sampled_from([1, 2, 3, 256]),
    start=st.tuples(st.integers(0, 3), st.integers(0, 3)),
)
def test_device_verdicts_count_as_python_bools_would(verdicts, fold_every, start):
    # Device verdicts are kept and counted in batches (no per-update ops): the counts read back
    # must be those of recording each verdict as a bool at once, at every read-back.
    from gan_accel.loop import guard as guard_module
    from gan_accel.loop.guard import NonFiniteGuard
    from gan_accel.loop.state import TrainState

    device_state, bool_state = TrainState(), TrainState()
    for s in (device_state, bool_state):
        s.nonfinite_streak, s.nonfinite_total = start[0], start[0] + start[1]
    on_device = NonFiniteGuard(device_state, 10**6)
    as_bools = NonFiniteGuard(bool_state, 10**6)
    saved = guard_module.FOLD_EVERY
    guard_module.FOLD_EVERY = fold_every
    try:
        for finite, read_back in verdicts:
            on_device.record(torch.tensor(finite))
            as_bools.record(finite)
            if read_back:
                on_device.check()
                assert (device_state.nonfinite_streak, device_state.nonfinite_total) == (
                    bool_state.nonfinite_streak,
                    bool_state.nonfinite_total,
                )
        on_device.check()
    finally:
        guard_module.FOLD_EVERY = saved
    assert (device_state.nonfinite_streak, device_state.nonfinite_total) == (
        bool_state.nonfinite_streak,
        bool_state.nonfinite_total,
    )
