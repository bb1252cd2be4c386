"""--channels_last and --compile: a few steps, checkpoints keep their key names, resume works;
the compile fallback prints why and trains eagerly. Fused Adam and the sync-free update on the
classifier path."""

import json

import pytest
import torch
from safetensors.torch import load_file

from benchmarks.common import reset_accelerate
from gan_accel.gan import speed
from helpers import TINY_GAN, load_script

train_gan = load_script("train_gan").main


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    # In-process runs share Accelerate's process-wide state: a bf16 run here must not inherit the
    # precision of whatever ran before it in this worker, nor leave its own to the next test.
    reset_accelerate()
    yield
    reset_accelerate()


def _run(out, *extra):
    return train_gan([*TINY_GAN, "--output_dir", str(out), "--checkpointing_steps", "2", *extra])


def _keys(ckpt):
    return {
        name: set(load_file(str(ckpt / name)))
        for name in ("model.safetensors", "model_1.safetensors", "ema.safetensors")
    }


def test_channels_last_trains_checkpoints_and_resumes(tmp_path):
    plain, cl = tmp_path / "plain", tmp_path / "cl"
    assert _run(plain, "--max_steps", "4") == 0
    assert _run(cl, "--max_steps", "2", "--channels_last") == 0
    assert _run(cl, "--max_steps", "4", "--channels_last", "--resume_from_checkpoint", "latest") == 0
    a, b = plain / "checkpoints" / "step_00000004", cl / "checkpoints" / "step_00000004"
    assert _keys(a) == _keys(b)  # same names: a channels_last checkpoint loads anywhere
    G_plain, G_cl = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    # Same maths in another memory layout: equal up to convolution rounding.
    assert max(float((G_plain[k] - G_cl[k]).abs().max()) for k in G_plain) < 1e-4
    assert json.loads((b / "trainer_state.json").read_text())["state"]["step"] == 4


def test_compile_fallback_trains_eagerly_with_a_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(speed, "compile_unavailable", lambda device: "RuntimeError: no compiler (test)")
    assert _run(tmp_path / "run", "--max_steps", "2", "--compile") == 0
    out = capsys.readouterr().out
    assert "--compile: torch.compile is unavailable here (RuntimeError: no compiler (test)); training continues" in out
    assert (tmp_path / "run" / "generator" / "model.safetensors").is_file()


def test_compile_in_place_keeps_state_dict_names(monkeypatch):
    """The flag's plumbing without paying for a compilation: modules are compiled in place."""
    monkeypatch.setattr(speed, "compile_unavailable", lambda device: None)
    G = torch.nn.Sequential(torch.nn.Linear(2, 2))
    keys = set(G.state_dict())
    messages = []
    assert speed.compile_in_place({"G": G}, torch.device("cpu"), messages.append)
    assert set(G.state_dict()) == keys and G._compiled_call_impl is not None
    assert "compiled G" in messages[0]


def test_compile_in_place_asks_for_static_shapes(monkeypatch):
    """FastGAN's D is called a second way (an extra argument on real images); the recompile with
    symbolic sizes failed in inductor under bf16 (torch 2.14.1) with a traceback mid-run."""
    monkeypatch.setattr(speed, "compile_unavailable", lambda device: None)
    calls = []
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **kwargs: calls.append(kwargs))
    speed.compile_in_place({"G": torch.nn.Linear(2, 2), "D": torch.nn.Linear(2, 1)}, torch.device("cpu"), print)
    assert calls == [{"dynamic": False}, {"dynamic": False}]


@pytest.mark.slow
def test_compile_trains_checkpoints_and_resumes(tmp_path):
    """Real torch.compile on CPU (tens of seconds): same checkpoint names, resume continues."""
    out = tmp_path / "run"
    assert _run(out, "--max_steps", "2", "--compile") == 0
    assert _run(out, "--max_steps", "4", "--compile", "--resume_from_checkpoint", "latest") == 0
    ref = tmp_path / "ref"
    assert _run(ref, "--max_steps", "4") == 0
    ckpt = out / "checkpoints" / "step_00000004"
    assert _keys(ckpt) == _keys(ref / "checkpoints" / "step_00000004")


@pytest.mark.slow
def test_compile_trains_fastgan(tmp_path):
    """Real torch.compile of FastGAN in bf16, whose D's second signature crashed the compiled backward."""
    assert (
        _run(tmp_path / "run", "--arch", "fastgan", "--max_steps", "3", "--mixed_precision", "bf16", "--compile") == 0
    )
    assert (tmp_path / "run" / "generator" / "model.safetensors").is_file()


def test_config_rejects_nothing_but_saves_the_flags(tmp_path):
    assert (
        train_gan([*TINY_GAN, "--output_dir", str(tmp_path / "d"), "--channels_last", "--compile", "--dry_run"]) == 0
    )


def test_classifier_optimizer_is_fused_and_update_is_sync_free():
    from gan_accel.classifier.config import ClassifierTrainArguments
    from gan_accel.classifier.model import build_optimizer

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    for name in ("adam", "adamw"):
        opt = build_optimizer(model, ClassifierTrainArguments(optimizer=name))
        assert opt.defaults["fused"] is True


def test_large_finite_gradients_are_applied_and_the_check_leaves_their_bits():
    # A norm of these overflows to inf (3e38 squared): the finite check must look at the elements.
    from types import SimpleNamespace

    from gan_accel.engine import apply_update, fused_or_foreach
    from gan_accel.engine.update import found_nonfinite

    grads = [torch.tensor([3e38, -3e38, -0.0, 1e-45]), torch.ones(2, dtype=torch.bfloat16)]
    before = [g.clone() for g in grads]
    assert float(found_nonfinite(grads)) == 0.0
    assert all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(before, grads))
    grads[1][0] = float("nan")
    assert float(found_nonfinite(grads)) == 1.0
    p = torch.nn.Parameter(torch.ones(3))
    raw = fused_or_foreach(torch.optim.Adam, [p], lr=0.1, betas=(0.5, 0.999))
    acc = SimpleNamespace(sync_gradients=True, device=torch.device("cpu"))
    opt = SimpleNamespace(optimizer=raw, step=raw.step, zero_grad=raw.zero_grad, param_groups=raw.param_groups)
    p.grad = torch.tensor([3e38, 3e38, 1.0])
    assert bool(apply_update(acc, opt, SimpleNamespace(step=lambda: None), True))
    assert int(raw.state[p]["step"]) == 1  # applied, not skipped


def test_apply_update_skips_on_device_with_a_given_verdict():
    from types import SimpleNamespace

    from gan_accel.engine import apply_update, fused_or_foreach

    p = torch.nn.Parameter(torch.ones(3))
    raw = fused_or_foreach(torch.optim.Adam, [p], lr=0.1, betas=(0.5, 0.999))
    calls = []
    acc = SimpleNamespace(sync_gradients=True, device=torch.device("cpu"))
    opt = SimpleNamespace(optimizer=raw, step=raw.step, zero_grad=raw.zero_grad)
    sched = SimpleNamespace(step=lambda: calls.append(1))
    p.grad = torch.ones(3)
    ok = apply_update(acc, opt, sched, True, finite=torch.tensor(False))
    assert torch.is_tensor(ok) and not bool(ok) and torch.equal(p.detach(), torch.ones(3))  # skipped on the device
    p.grad = torch.ones(3)
    assert bool(apply_update(acc, opt, sched, True, finite=torch.tensor(True)))
    assert not torch.equal(p.detach(), torch.ones(3)) and calls == [1, 1]


def test_the_update_steps_the_torch_optimizer_where_accelerates_wrapper_only_forwards(monkeypatch):
    # Accelerate's AcceleratedOptimizer.step() searches the disk for an optional package at every
    # call (~0.1 ms each on a CPU); without a GradScaler it then only calls the torch step. The
    # update steps the torch optimizer directly then, with the weights of a plain torch loop.
    from accelerate import Accelerator
    from accelerate.optimizer import AcceleratedOptimizer

    from gan_accel.engine import apply_update
    from gan_accel.engine.update import plain_step

    def weights_after_3_updates(prepared: bool):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.Adam(model.parameters(), lr=0.1, fused=True)
        acc = Accelerator(cpu=True)
        if prepared:
            model, opt = acc.prepare(model, opt)
        sched = torch.optim.lr_scheduler.LambdaLR(getattr(opt, "optimizer", opt), lambda s: 1.0)
        for _ in range(3):
            acc.backward(model(torch.ones(8, 4)).square().mean())
            if prepared:
                assert bool(apply_update(acc, opt, sched, True))
            else:
                opt.step()
                opt.zero_grad()
        return [p.detach().clone() for p in model.parameters()]

    wrapper_steps = []
    monkeypatch.setattr(AcceleratedOptimizer, "step", lambda self, *a: wrapper_steps.append(1))
    got = weights_after_3_updates(prepared=True)
    assert wrapper_steps == []
    assert all(torch.equal(a, b) for a, b in zip(got, weights_after_3_updates(prepared=False)))
    assert plain_step(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1)) is None  # not prepared: as is
    scaled = AcceleratedOptimizer(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1))
    scaled.scaler = object()
    assert plain_step(scaled) is None  # a GradScaler's step goes through Accelerate
