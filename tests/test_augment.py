"""DiffAugment: the same generator state gives the same transform (real and fake alike), every
transform is differentiable, and each does what it says; in the step and the trainer, with the
lazy R1 schedule that shares its plumbing."""

import pytest
import torch
import torch.nn.functional as F
from accelerate import Accelerator

import gan_accel.gan.step as step_mod
import gan_accel.gan.trainer as trainer_mod
from gan_accel.config import RunArguments
from gan_accel.errors import ConfigError
from gan_accel.gan.augment import POLICIES, cutout, diff_augment, make_augment, parse_policy, translation
from gan_accel.gan.config import GANDataArguments, GANModelArguments, GANTrainArguments
from gan_accel.models import build_models
from helpers import read_jsonl

ALL = ("translation", "cutout", "color")


def seeded(seed=0):
    return torch.Generator().manual_seed(seed)


def images(b=6, c=1, s=16, seed=1):
    return torch.rand(b, c, s, s, generator=seeded(seed)) * 2 - 1


@pytest.mark.parametrize("policy", [("translation",), ("cutout",), ("color",), ALL])
def test_same_generator_state_same_transform_for_a_pair(policy):
    real, fake = images(seed=1), images(seed=2)
    a_real, a_fake = diff_augment(real, policy, seeded(7)), diff_augment(fake, policy, seeded(7))
    # Same parameters: applied to the same batch they agree exactly ...
    assert torch.equal(diff_augment(real, policy, seeded(7)), a_real)
    # ... and the transform of the pair is the same map. translation/cutout are linear in x, so
    # aug(real) - aug(fake) == aug(real - fake) with shared parameters; color is affine per image,
    # which the difference of two images removes (the brightness shift cancels).
    if "color" not in policy:
        assert torch.allclose(a_real - a_fake, diff_augment(real - fake, policy, seeded(7)), atol=1e-6)
    # A different seed gives different parameters (the test can fail).
    assert not torch.equal(diff_augment(real, policy, seeded(8)), a_real)


def test_make_augment_reseeds_on_every_call():
    calls = []

    def make_generator():
        calls.append(1)
        return seeded(3)

    augment = make_augment(ALL, make_generator)
    x = images()
    assert torch.equal(augment(x), augment(x)) and len(calls) == 2
    assert make_augment((), make_generator) is None


def test_parameters_differ_between_samples_of_a_batch():
    x = torch.ones(32, 1, 16, 16)
    out = cutout(x, seeded(0))
    masks = {tuple(m.flatten().tolist()) for m in out}
    assert len(masks) > 10  # one cutout position per image, not one for the batch


@pytest.mark.parametrize("policy", [("translation",), ("cutout",), ("color",), ALL])
def test_differentiable_gradcheck(policy):
    x = (torch.rand(2, 3, 8, 8, dtype=torch.float64) * 2 - 1).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: diff_augment(t, policy, seeded(5)), (x,))


def test_gradient_reaches_every_kept_pixel():
    x = images().requires_grad_(True)
    out = diff_augment(x, ("cutout",), seeded(0))
    out.sum().backward()
    keep = (out.detach() != 0).float()  # images() has no exact zeros
    assert torch.equal(x.grad, keep)


def _shift(x, dy, dx):
    """x shifted by (dy, dx) with zero fill, the definition translation() must match."""
    H, W = x.shape[-2:]
    p = max(abs(dy), abs(dx))
    padded = F.pad(x, [p, p, p, p])
    return padded[..., p - dy : p - dy + H, p - dx : p - dx + W]


def test_translation_is_a_zero_filled_shift_within_the_ratio():
    x = images(b=16, s=16)
    out = translation(x, seeded(4))
    s = round(16 * 0.125)
    shifts = []
    for img, aug in zip(x, out):
        found = [
            (dy, dx) for dy in range(-s, s + 1) for dx in range(-s, s + 1) if torch.equal(_shift(img, dy, dx), aug)
        ]
        assert len(found) == 1, "not a shift of the input within +-1/8 of the side"
        shifts.append(found[0])
    assert len(set(shifts)) > 3


def test_cutout_zeroes_one_square_of_half_the_side():
    out = cutout(torch.ones(64, 1, 16, 16), seeded(2))
    zeroed = (out == 0).flatten(1).sum(1)
    assert zeroed.max() == 8 * 8  # a full 8x8 square when it lies inside the image
    assert (zeroed > 0).all() and (zeroed < 64).sum() > 0  # some overhang the edge
    for img in out[:8, 0]:
        rows, cols = (img == 0).nonzero(as_tuple=True)
        box = (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)
        assert box == len(rows)  # the zeros form one rectangle


def test_color_is_an_affine_map_per_image():
    x = images(b=4, c=3)
    out = diff_augment(x, ("color",), seeded(0))
    assert out.shape == x.shape and not torch.equal(out, x)
    # Brightness/saturation/contrast are affine in x for fixed parameters: aug(2x) - aug(x) is
    # aug(x) - aug(0) (linear part only), whatever the parameters.
    a0, a1, a2 = (diff_augment(k * x, ("color",), seeded(0)) for k in (0, 1, 2))
    assert torch.allclose(a2 - a1, a1 - a0, atol=1e-5)


def test_policy_order_does_not_matter_and_bad_names_are_refused():
    x = images()
    assert torch.equal(
        diff_augment(x, parse_policy("cutout, translation"), seeded(0)),
        diff_augment(x, parse_policy("translation,cutout"), seeded(0)),
    )
    assert parse_policy("") == () and set(parse_policy(",".join(POLICIES))) == set(POLICIES)
    with pytest.raises(ValueError, match="flip"):
        parse_policy("translation,flip")
    with pytest.raises(ConfigError, match="--diffaugment"):
        GANTrainArguments(diffaugment="translation,flip")
    with pytest.raises(ConfigError, match="--r1_interval"):
        GANTrainArguments(r1_gamma=1.0, r1_interval=0)
    with pytest.raises(ConfigError, match="--r1_gamma"):
        GANTrainArguments(r1_gamma=-1.0)


# ---- in the step and in the trainer ------------------------------------------------------


def d_step(acc, D, *args, **kwargs):
    """D's phase as the engine runs it: the loss, then its backward."""
    loss, metrics = step_mod.d_loss(D, *args, **kwargs)
    acc.backward(loss)
    return metrics


def test_d_step_applies_augment_to_real_and_fake_alike():
    torch.manual_seed(0)
    acc = Accelerator(cpu=True)
    _, D = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="none")
    real, fake = images(b=4), images(b=4, seed=9)
    augment = make_augment(ALL, lambda: seeded(11))
    m_aug = d_step(acc, D, real, fake, None, "nonsaturating", augment=augment)
    grads_aug = [p.grad.clone() for p in D.parameters()]
    D.zero_grad()
    # The same as handing D the augmented batches, each augmented with the same parameters.
    m_direct = d_step(
        acc, D, diff_augment(real, ALL, seeded(11)), diff_augment(fake, ALL, seeded(11)), None, "nonsaturating"
    )
    assert torch.equal(m_aug["loss/D"], m_direct["loss/D"])
    assert all(torch.allclose(a, p.grad) for a, p in zip(grads_aug, D.parameters()))
    D.zero_grad()
    m_plain = d_step(acc, D, real, fake, None, "nonsaturating")
    assert not torch.equal(m_plain["loss/D"], m_aug["loss/D"])


@pytest.mark.parametrize("accum", [1, 2])
def test_trainer_lazy_r1_phase_and_weight_per_update_window(tmp_path, monkeypatch, accum):
    """R1 on every k-th D update only, weighted gamma/2 * k, on EVERY micro-step of that update's
    accumulation window; DiffAugment is passed to both phases."""
    seen = []
    real_d_step, real_g_step = step_mod.d_loss, step_mod.g_loss

    def spy_d_step(*args, r1_weight=0.0, augment=None, **kw):
        seen.append(("D", r1_weight, augment is not None))
        return real_d_step(*args, r1_weight=r1_weight, augment=augment, **kw)

    def spy_g_step(*args, augment=None, **kw):
        seen.append(("G", None, augment is not None))
        return real_g_step(*args, augment=augment, **kw)

    monkeypatch.setattr(step_mod, "d_loss", spy_d_step)
    monkeypatch.setattr(step_mod, "g_loss", spy_g_step)
    t = trainer_mod.GANTrainer(
        GANDataArguments(image_size=16),
        GANModelArguments(z_dim=8, g_channels=4, d_channels=4),
        GANTrainArguments(
            max_steps=7, batch_size=16, sample_every=0, r1_gamma=4.0, r1_interval=3, diffaugment="translation"
        ),
        RunArguments(output_dir=str(tmp_path / "run"), checkpointing_steps=0, gradient_accumulation_steps=accum),
    )
    t.train()
    d_calls = [c for c in seen if c[0] == "D"]
    assert len(d_calls) == 7 * accum
    expected = [4.0 / 2 * 3 if (micro // accum) % 3 == 0 else 0.0 for micro in range(7 * accum)]
    assert [c[1] for c in d_calls] == expected
    assert all(c[2] for c in seen) and sum(c[0] == "G" for c in seen) == 7 * accum
    assert any("reg/r1" in r for r in read_jsonl(tmp_path / "run" / "metrics.jsonl"))
