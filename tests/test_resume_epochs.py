"""Exact resume across epoch boundaries (GAN path): stopping after k updates and resuming to 2k
gives the same weights, optimizer states and counters as 2k updates straight, when the resume
point lies inside a later epoch and when it lies exactly at an epoch's end.

Accelerate's prepared dataloader calls ``sampler.set_epoch(its own pass counter)`` at the start
of every pass, and a freshly built loader's counter is 0: a resume that only repositioned the
sampler replayed epoch 0. Resuming inside epoch 0 cannot see that, so these tests resume later.
"""

import json

import pytest
import torch

from gan_accel.data import ResumableSampler
from test_gan_train import tensors_of, trainer

# 1797 digits / batch 256 = 7 batches per epoch (drop_last): short epochs at 16 px and 8 channels.
BATCHES_PER_EPOCH = 7
KW = dict(batch_size=256, lr_scheduler="constant", ema_decay=0.9, d_norm="none")


def position(state):
    """Batches consumed according to the sampler's (epoch, start) counters."""
    return state["epoch"] * BATCHES_PER_EPOCH + state["epoch_start"] // 256


def state_of(ckpt):
    return json.loads((ckpt / "trainer_state.json").read_text())["state"]


@pytest.mark.parametrize(
    "k,accum",
    [
        (2 * BATCHES_PER_EPOCH, 1),  # the resume point is exactly the end of epoch 1
        (2 * BATCHES_PER_EPOCH + 3, 1),  # in the middle of epoch 2
        (BATCHES_PER_EPOCH + 2, 2),  # accumulation (an epoch's odd last batch is an update): epoch 2
    ],
)
def test_resume_in_a_later_epoch_equals_uninterrupted_run(tmp_path, k, accum):
    kw = dict(KW, gradient_accumulation_steps=accum)
    trainer(tmp_path / "straight", 2 * k, **kw).train()
    trainer(tmp_path / "split", k, **kw).train()
    stopped = state_of(tmp_path / "split" / "checkpoints" / f"step_{k:08d}")
    assert stopped["epoch"] >= 1 and position(stopped) == stopped["micro_step"]
    trainer(tmp_path / "split", 2 * k, resume_from_checkpoint="latest", **kw).train()

    final = f"step_{2 * k:08d}"
    a, b = (
        tensors_of(tmp_path / "straight" / "checkpoints" / final),
        tensors_of(tmp_path / "split" / "checkpoints" / final),
    )
    assert a.keys() == b.keys() and len(a) > 20
    assert all(torch.equal(a[key], b[key]) for key in a), [key for key in a if not torch.equal(a[key], b[key])][:5]
    sa, sb = (
        state_of(tmp_path / "straight" / "checkpoints" / final),
        state_of(tmp_path / "split" / "checkpoints" / final),
    )
    assert sa == sb
    # The counters say where the data order stands: the engine rolls an epoch over at the update
    # that ends it, so an end of epoch reads (next epoch, 0).
    assert position(sa) == sa["micro_step"] and 0 <= sa["epoch_start"] < BATCHES_PER_EPOCH * 256


def test_a_set_position_survives_the_loaders_set_epoch():
    sampler = ResumableSampler(10, seed=3)
    sampler.set_position(2, 4)
    sampler.set_epoch(0)  # what a freshly prepared dataloader does at the start of its first pass
    assert list(sampler) == sampler.permutation(2)[4:].tolist()
    sampler.set_epoch(3)  # once consumed, set_epoch moves to the next epoch from its start
    assert list(sampler) == sampler.permutation(3).tolist()
    with pytest.raises(ValueError, match="outside"):
        sampler.set_position(0, 11)
