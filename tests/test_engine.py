"""The engine with a recipe written here, in the test file: an encoder E and a generator G that
share one optimizer, a discriminator D, and a frozen feature network F (an adversarial
autoencoder with a perceptual term). A new network is a declaration, not a fork: the recipe
resumes bit-identically (also in a later epoch and exactly at an epoch end) and runs on two
processes like on one. Run as a script, it is what torchrun launches."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.utils.data import DataLoader

from gan_accel.config import RunArguments
from gan_accel.data import ResumableSampler
from gan_accel.engine import AFTER_CHECKPOINT, UPDATE, Hook, LRSchedule, Network, Optimizer, Phase, Recipe, State, adam
from gan_accel.engine.engine import Engine
from gan_accel.gan.ema import EMA
from gan_accel.loop import TrainingRun
from helpers import GRADIENT_LEAK

N, DIM, CODE = 96, 8, 4


# ---- the recipe: networks, phases, losses --------------------------------------------------
def d_loss(s):
    real_logits, fake_logits = s.nets.D(s["real"]), s.nets.D(s["fake"].detach())
    loss = F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()  # -log D(x) - log(1 - D(G(E(x))))
    return loss, {"loss/D": loss.detach()}


def g_loss(s):
    adversarial = F.softplus(-s.nets.D(s["fake"])).mean()  # -log D(G(E(x)))
    perceptual = (s.nets.F(s["fake"]) - s.nets.F(s["real"])).abs().mean()  # L1 in a frozen feature space
    return adversarial + perceptual, {"loss/G": adversarial.detach(), "loss/perceptual": perceptual.detach()}


def build_recipe(
    data: torch.Tensor, steps: int, with_encoder: bool = True, shared_optimizer: bool = True, freeze_d: bool = True
) -> Recipe:
    torch.manual_seed(0)
    G, D = (
        nn.Linear(CODE if with_encoder else DIM, DIM),
        nn.Sequential(nn.Linear(DIM, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)),
    )
    E, Feat = nn.Linear(DIM, CODE), nn.Linear(DIM, DIM)
    encoder = [Network("E", E, optimizer="G" if shared_optimizer else "E")] if with_encoder else []
    own = (
        [] if shared_optimizer else [Optimizer("E", adam(1e-2, (0.5, 0.99)), LRSchedule("linear", 1, steps))]
    )  # FSDP2

    def inputs(s):
        real = data.to(s.accelerator.device)[s.batch]
        with torch.set_grad_enabled(s.runs("G")):  # one forward serves both phases; a graph only when G trains
            fake = s.nets.G(s.nets.E(real) if with_encoder else real)
        return {"real": real, "fake": fake}

    return Recipe(
        networks=[Network("G", G, optimizer="G"), *encoder, Network("D", D, optimizer="D"), Network("F", Feat)],
        optimizers=[
            Optimizer("G", adam(1e-2, (0.5, 0.99)), LRSchedule("linear", 1, steps)),
            # In run steps: D, updating twice per G update, gets a schedule twice as long.
            Optimizer("D", adam(1e-2, (0.5, 0.99)), LRSchedule("linear", 1, steps)),
            *own,
        ],
        phases=[
            Phase("D", trains=["D"], loss=d_loss),
            Phase(
                "G",
                trains=["G", "E"] if with_encoder else ["G"],
                frozen=["D"] if freeze_d else [],
                loss=g_loss,
                every=2,
                offset=1,
            ),
        ],
        progress="G",
        inputs=inputs,
    )


def train(
    output_dir,
    steps: int,
    batch_size: int = 16,
    resume: bool = False,
    with_encoder: bool = True,
    checkpointing_steps: int = 0,
    setup=None,
    freeze_d: bool = True,
) -> Engine:
    run_args = RunArguments(
        output_dir=str(output_dir),
        log_every=1,
        checkpointing_steps=checkpointing_steps,
        resume_from_checkpoint="latest" if resume else None,
    )
    run = TrainingRun(run_args, {"steps_planned": 8, "batch_size": batch_size * 1}, project="engine_test")
    data = torch.randn(N, DIM, generator=torch.Generator().manual_seed(1))
    loader = DataLoader(range(N), batch_size=batch_size, sampler=ResumableSampler(N, seed=0), drop_last=True)
    engine = Engine(run, build_recipe(data, 8, with_encoder, freeze_d=freeze_d), loader, max_steps=steps)
    ema = EMA(engine.module("G"), decay=0.9)
    engine.add(State("ema", ema), Hook(lambda: ema.update(engine.module("G"), run.state.step), when=UPDATE))
    if setup is not None:
        setup(engine)
    engine.resume()
    engine.train()
    run.finish()
    return engine


# ---- tests ---------------------------------------------------------------------------------
def checkpoint_tensors(ckpt: Path) -> dict:
    out = {f"{f.name}.{k}": v for f in sorted(ckpt.glob("*.safetensors")) for k, v in load_file(str(f)).items()}
    for f in sorted(ckpt.glob("optimizer*.bin")):
        for idx, st in torch.load(f, weights_only=True)["state"].items():
            out.update({f"{f.name}.{idx}.{k}": v for k, v in st.items()})
    return out


# 96 samples, 16 a batch: 6 windows an epoch, G every 2nd window. k=3 stops exactly at the end of
# epoch 0 (window 6), k=4 inside epoch 1; 2k crosses one or two epoch boundaries.
@pytest.mark.parametrize("k", [3, 4])
def test_resume_equals_uninterrupted_run(tmp_path, k):
    straight = train(tmp_path / "straight", 2 * k)
    train(tmp_path / "split", k)
    resumed = train(tmp_path / "split", 2 * k, resume=True)
    a = checkpoint_tensors(tmp_path / "straight" / "checkpoints" / f"step_{2 * k:08d}")
    b = checkpoint_tensors(tmp_path / "split" / "checkpoints" / f"step_{2 * k:08d}")
    assert a.keys() == b.keys() and {"model_3.safetensors.weight", "ema.safetensors.weight"} <= a.keys()
    assert all(torch.equal(a[key], b[key]) for key in a), [key for key in a if not torch.equal(a[key], b[key])]
    assert repr(straight.state) == repr(resumed.state)  # repr: best_metric is NaN, and NaN != NaN
    assert resumed.state.updates == {"D": 4 * k, "G": 2 * k} and resumed.state.epoch == (4 * k) // 6
    assert resumed.prepared.model_order == ["G", "E", "D", "F"]
    assert not any(q.requires_grad for q in resumed.nets.F.parameters())  # a network without optimizer never trains


def test_resume_with_another_recipe_is_refused(tmp_path):
    from gan_accel.errors import UserError

    train(tmp_path / "run", 2)
    with pytest.raises(UserError, match=r"different recipe \(.*networks .*'E'.* -> "):
        train(tmp_path / "run", 4, resume=True, with_encoder=False)


def test_hooks_after_checkpoint_run_once_that_steps_checkpoint_exists(tmp_path):
    # Outputs that may fail (image grids) must never cost the checkpoint of their step; an
    # evaluation comes before it (the best value is saved with it).
    seen = []

    def setup(engine):
        def saved():
            return (tmp_path / "run" / "checkpoints" / f"step_{engine.state.step:08d}").is_dir()

        engine.add(
            Hook(lambda: seen.append(("before", engine.state.step, saved())), every=2),
            Hook(
                lambda: seen.append(("after", engine.state.step, saved())),
                every=2,
                at_end=False,
                when=AFTER_CHECKPOINT,
            ),
        )

    train(tmp_path / "run", 4, checkpointing_steps=2, setup=setup)
    assert seen == [("before", 2, False), ("after", 2, True), ("before", 4, False), ("after", 4, True)]


def test_mixed_precision_off_enters_no_autocast(tmp_path, monkeypatch):
    # Accelerate's autocast is a no-op then, but not a free one: several per update.
    def refuse_autocast(engine):
        def autocast(*args, **kwargs):
            raise AssertionError("accelerator.autocast() entered with mixed precision off")

        monkeypatch.setattr(engine.accelerator, "autocast", autocast)

    engine = train(tmp_path / "run", 2, setup=refuse_autocast)
    assert engine.state.step == 2


def test_a_phase_writing_gradients_into_a_network_it_neither_trains_nor_freezes_warns(tmp_path, capsys):
    # G's loss runs through D: without frozen=["D"] its backward writes D's gradients, which D's
    # next update would add to its own. One line per (phase, network), at the phase's first
    # backward only; the correct recipe (D frozen in G's phase, fakes detached in D's) says nothing.
    train(tmp_path / "leaky", 3, freeze_d=False)
    warned = [line for line in capsys.readouterr().out.splitlines() if GRADIENT_LEAK in line]
    assert len(warned) == 1, warned
    assert "phase 'G'" in warned[0] and "'D'" in warned[0] and 'frozen=["D"]' in warned[0], warned[0]
    train(tmp_path / "frozen", 3)
    assert GRADIENT_LEAK not in capsys.readouterr().out


def test_two_processes_equal_one_process(tmp_path):
    train(tmp_path / "single", 4, batch_size=16)
    # The checkout first on the path: run as a script, this file imports the package of its own tree.
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        __file__,
        str(tmp_path / "ddp"),
        "4",
        "8",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "processes: 2" in proc.stdout
    a = checkpoint_tensors(tmp_path / "single" / "checkpoints" / "step_00000004")
    b = checkpoint_tensors(tmp_path / "ddp" / "checkpoints" / "step_00000004")
    assert a.keys() == b.keys()
    worst = max((a[key].double() - b[key].double()).abs().max().item() for key in a)
    assert worst < 1e-5, worst


if __name__ == "__main__":  # torchrun tests/test_engine.py OUTPUT_DIR STEPS BATCH_SIZE
    train(sys.argv[1], int(sys.argv[2]), batch_size=int(sys.argv[3]))
