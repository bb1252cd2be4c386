"""--arch fastgan: shapes at every size, skip-layer excitation, D's self-supervised reconstruction
(only on request, only into D, against the right targets), a run on the digits whose export the
other commands read, and a resume that reproduces the uninterrupted run bit for bit."""

import json

import pytest
import torch
import torch.nn.functional as F

from gan_accel.config import RunArguments
from gan_accel.engine import RandomStreams
from gan_accel.gan.config import GANDataArguments, GANModelArguments, GANTrainArguments
from gan_accel.gan.recipe import STREAMS
from gan_accel.gan.step import d_loss, g_loss
from gan_accel.gan.trainer import GANTrainer
from gan_accel.models import build_models, load_generator, save_generator, supported_sizes
from gan_accel.models.fastgan import FastGANGenerator, SkipExcitation, quadrant
from helpers import TINY_GAN, load_script, one_line_error, read_jsonl
from test_distributed import EXACT, torchrun
from test_gan_train import tensors_of

TINY = dict(z_dim=8, g_channels=8, d_channels=8)
train_gan = load_script("train_gan").main
sample_gan = load_script("sample_gan").main


def tiny(size=16, channels=1, num_classes=0, d_norm="batch"):
    return build_models("fastgan", channels=channels, image_size=size, d_norm=d_norm, num_classes=num_classes, **TINY)


@pytest.mark.parametrize("size", supported_sizes("fastgan"))
def test_shapes_at_every_size(size):
    G, D = tiny(size, channels=3)
    x = G(torch.randn(2, 8))
    assert x.shape == (2, 3, size, size) and x.min() >= -1 and x.max() <= 1
    logits = D(x)
    assert isinstance(logits, torch.Tensor) and logits.shape == (2,)  # no reconstruction unless asked
    logits, recon = D(x, None, torch.tensor([0, 3]))
    assert logits.shape == (2,) and recon.shape == () and recon > 0
    # SLE from every side r to 4r inside the image: 4->16 at 16 px, then 8->32, 16->64, 32->128.
    sles = [m for m in G.modules() if isinstance(m, SkipExcitation)]
    assert len(sles) == {16: 1, 32: 2, 64: 3, 128: 4}[size]


def test_skip_excitation_gates_each_channel_in_0_1():
    G, _ = tiny(32)
    gates = []
    hooks = [m.gate.register_forward_hook(lambda m, i, out: gates.append(out)) for m in G.sle.values()]
    G(torch.randn(4, 8))
    for h in hooks:
        h.remove()
    assert [tuple(g.shape) for g in gates] == [(4, 4, 1, 1), (4, 2, 1, 1)]  # one gate per channel of 16x16, 32x32
    assert all(((g > 0) & (g < 1)).all() for g in gates)
    sle = G.sle["2"]
    low, high = torch.randn(3, 16, 4, 4), torch.randn(3, 4, 16, 16)
    assert torch.equal(sle(low, high), high * sle.gate(low))


def test_quadrant_picks_each_images_own_quarter():
    x = torch.arange(2 * 1 * 4 * 4, dtype=torch.float).view(2, 1, 4, 4)
    got = quadrant(x, torch.tensor([1, 2]))
    assert torch.equal(got[0], x[0, :, :2, 2:]) and torch.equal(got[1], x[1, :, 2:, :2])


def test_reconstruction_targets_are_the_resized_image_and_its_quadrant():
    """With decoders that output zeros the loss is the mean square of the targets: the whole
    image area-resized to half its side, plus each image's chosen quadrant."""
    _, D = tiny(32)

    class Zeros(torch.nn.Module):
        def forward(self, h):
            return torch.zeros(h.shape[0], 1, 16, 16)

    D.decode_whole = Zeros()
    D.decode_part = Zeros()
    x = torch.rand(3, 1, 32, 32) * 2 - 1
    q = torch.tensor([0, 3, 1])
    _, recon = D(x, None, q)
    whole = F.avg_pool2d(x, 2)
    part = torch.stack([x[0, :, :16, :16], x[1, :, 16:, 16:], x[2, :, :16, 16:]])
    assert torch.allclose(recon, whole.pow(2).mean() + part.pow(2).mean())


@pytest.mark.parametrize("num_classes", [0, 10])
def test_reconstruction_trains_d_only(num_classes):
    torch.manual_seed(0)
    G, D = tiny(16, num_classes=num_classes)
    labels = torch.randint(0, 10, (4,)) if num_classes else None
    real = torch.rand(4, 1, 16, 16) * 2 - 1
    fake = G(torch.randn(4, 8), labels)
    # The recon loss alone: into the decoders and the blocks it reads, never into the logit head.
    _, recon = D(real, labels, torch.tensor([0, 1, 2, 3]))
    recon.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in D.decode_whole.parameters())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in D.decode_part.parameters())
    assert all(p.grad is None for p in D.head.parameters())
    D.zero_grad(set_to_none=True)
    total, metrics = d_loss(D, real, fake, labels, "nonsaturating", recon_quadrants=torch.tensor([3, 2, 1, 0]))
    assert "reg/recon" in metrics and torch.allclose(total, metrics["loss/D"])  # recon_weight 0: logged, not added
    total, metrics = d_loss(
        D, real, fake, labels, "nonsaturating", recon_quadrants=torch.tensor([3, 2, 1, 0]), recon_weight=2.0
    )
    assert torch.allclose(total, metrics["loss/D"] + 2.0 * metrics["reg/recon"])
    total.backward()
    assert all(p.grad is None for p in G.parameters())  # the fake is detached; reals only are rebuilt
    assert "reg/recon" not in d_loss(D, real, fake, labels, "nonsaturating")[1]
    # G's phase (D frozen, as the recipe declares) asks for no reconstruction: no decoder gradient.
    D.zero_grad(set_to_none=True)
    D.requires_grad_(False)
    g_loss(D, fake, labels, "nonsaturating")[0].backward()
    D.requires_grad_(True)
    assert all(p.grad is None for p in D.parameters())
    assert all(p.grad is not None for p in G.parameters())


def test_the_recon_stream_moves_no_earlier_seed():
    """A stream appended last: the streams every earlier GAN run drew keep their seeds."""
    from accelerate import Accelerator

    acc = Accelerator(cpu=True)
    before = RandomStreams({"z": 0, "labels": 1, "gp_alpha": 2, "augment": 3, "ada": 4}, 3, acc, 4)
    now = RandomStreams(STREAMS, 3, acc, 4)
    assert max(STREAMS, key=STREAMS.get) == "recon"
    for name in before.index:
        assert torch.equal(before.normal(name, 7, 2), now.normal(name, 7, 2))
    assert not torch.equal(now.normal("recon", 7, 2), now.normal("ada", 7, 2))


def test_export_round_trip_and_model_card(tmp_path):
    G, _ = tiny(32, channels=3, num_classes=10)
    G.eval()
    save_generator(G, tmp_path / "g")
    G2 = load_generator(tmp_path / "g")
    assert isinstance(G2, FastGANGenerator) and (G2.z_dim, G2.num_classes, G2.image_size) == (8, 10, 32)
    z, y = torch.randn(2, 8), torch.tensor([1, 9])
    assert torch.equal(G(z, y), G2(z, y))
    assert "from gan_accel.models.fastgan import FastGANGenerator" in (tmp_path / "g" / "README.md").read_text()


def test_train_sample_and_onnx_on_the_digits(tmp_path, capsys):
    out = tmp_path / "run"
    assert train_gan([*TINY_GAN, "--arch", "fastgan", "--output_dir", str(out), "--max_steps", "4"]) == 0
    records = read_jsonl(out / "metrics.jsonl")
    assert records and all(r["reg/recon"] > 0 for r in records)
    assert json.loads((out / "generator" / "config.json").read_text())["arch"] == "fastgan"
    assert (
        sample_gan(["--generator", str(out / "generator"), "--num_images", "3", "--output_dir", str(tmp_path / "s")])
        == 0
    )
    assert len(list((tmp_path / "s").glob("*.png"))) == 3
    pytest.importorskip("onnxruntime")
    capsys.readouterr()
    export_onnx = load_script("export_onnx").main
    assert export_onnx(["--generator", str(out / "generator"), "--output", str(tmp_path / "g.onnx")]) == 0
    assert "max abs difference" in capsys.readouterr().out


def test_recon_weight_flags(tmp_path, capsys):
    line = one_line_error(train_gan, [*TINY_GAN, "--output_dir", str(tmp_path / "a"), "--recon_weight", "0.5"], capsys)
    assert "--recon_weight" in line and "--arch dcgan" in line
    line = one_line_error(
        train_gan,
        [*TINY_GAN, "--arch", "fastgan", "--output_dir", str(tmp_path / "b"), "--recon_weight", "nan"],
        capsys,
    )
    assert "--recon_weight must be a finite number" in line
    assert not any(tmp_path.iterdir())


def test_the_precision_probe_times_the_reconstruction_too():
    """The bf16/fp32 probe (--measure_precision) times the run's own D update, decoders included."""
    from benchmarks.speed.roofline import count_flops
    from gan_accel.gan.precision import gan_update

    model = GANModelArguments(arch="fastgan", **TINY)
    data = GANDataArguments(image_size=16)
    flops = {
        w: count_flops(lambda w=w: gan_update(GANTrainArguments(batch_size=4, recon_weight=w), model, data)(False))
        for w in (0.0, 1.0)
    }
    assert flops[1.0] > flops[0.0]


def trainer(out, max_steps, resume=None, **overrides):
    data = GANDataArguments(image_size=16)
    model = GANModelArguments(arch="fastgan", **TINY)
    train = GANTrainArguments(max_steps=max_steps, sample_every=0, **overrides)
    run = RunArguments(output_dir=str(out), log_every=1, checkpointing_steps=0, resume_from_checkpoint=resume)
    return GANTrainer(data, model, train, run)


def test_resume_equals_uninterrupted_run(tmp_path):
    # 128 x 1797 digits: 14 batches per epoch, so a stop after 4 updates is mid-epoch. DiffAugment
    # on: the reconstruction rebuilds the augmented reals, whose draws must resume too.
    kw = dict(batch_size=128, ema_decay=0.9, diffaugment="translation,cutout", recon_weight=0.5)
    trainer(tmp_path / "straight", 8, **kw).train()
    trainer(tmp_path / "split", 4, **kw).train()
    resumed = trainer(tmp_path / "split", 8, resume="latest", **kw)
    assert resumed.run.state.step == 4
    resumed.train()
    a = tensors_of(tmp_path / "straight" / "checkpoints" / "step_00000008")
    b = tensors_of(tmp_path / "split" / "checkpoints" / "step_00000008")
    assert a.keys() == b.keys() and any("decode_part" in key for key in a)
    assert all(torch.equal(a[key], b[key]) for key in a), [key for key in a if not torch.equal(a[key], b[key])][:5]
    straight = [r["reg/recon"] for r in read_jsonl(tmp_path / "straight" / "metrics.jsonl")]
    split = [r["reg/recon"] for r in read_jsonl(tmp_path / "split" / "metrics.jsonl")]
    assert straight[-4:] == split[-4:]


@pytest.mark.parametrize("recon_weight", ["1", "0"])
def test_two_processes_equal_one_process(tmp_path, recon_weight):
    """BN-free, 2 processes on half batches train what 1 process does on the whole: the decoders'
    gradients are averaged like every other one, and each rank rebuilds the quadrants of its own
    rows of the global batch's draw. Without the reconstruction, the decoders that never run are
    frozen (DDP would otherwise wait for their gradients and fail at the second update)."""
    flags = [*EXACT, "--arch", "fastgan", "--max_steps", "3", "--sample_every", "0", "--recon_weight", recon_weight]
    assert train_gan([*flags, "--output_dir", str(tmp_path / "single"), "--batch_size", "32"]) == 0
    torchrun([*flags, "--output_dir", str(tmp_path / "ddp"), "--batch_size", "16"])
    a = tensors_of(tmp_path / "single" / "checkpoints" / "step_00000003")
    b = tensors_of(tmp_path / "ddp" / "checkpoints" / "step_00000003")
    assert a.keys() == b.keys() and any("decode_whole" in key for key in a)
    # D's Adam (optimizer_1.bin: step, exp_avg, exp_avg_sq of each) holds the decoders only when they train.
    decoders = len([k for k in a if k.startswith("D.decode_")])
    trained = len([k for k in a if k.startswith("D.")]) - (0 if recon_weight == "1" else decoders)
    assert decoders and len([k for k in a if k.startswith("optimizer_1.bin")]) == 3 * trained
    worst = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    assert worst < 1e-5, worst
