"""The image history buffer of Shrivastava et al. (2017) as CycleGAN uses it.

D is trained on a mix of the newest fakes and fakes from the last ``pool_size`` generated
images, which damps the oscillation of G and D chasing each other. The behaviour is the
reference's ``ImagePool.query`` (junyanz/pytorch-CycleGAN-and-pix2pix, ``util/image_pool.py``):
until the pool is full every image is stored and returned; afterwards each image is, with
probability 1/2, swapped for a random stored one (which is returned, the new one taking its slot),
and otherwise returned as is.

Unlike the reference, the coin flips come from a seeded ``torch.Generator`` and everything is in
:meth:`ImagePool.state_dict`, so a resumed run draws what the uninterrupted one would have.
"""

from __future__ import annotations

from typing import Optional

import torch


class ImagePool:
    def __init__(self, pool_size: int, seed: int = 0, device=None) -> None:
        self.pool_size = pool_size
        self.device = torch.device(device or "cpu")  # where the stored images live (the accelerator)
        self.generator = torch.Generator().manual_seed(seed)  # on the CPU: the same draws on any device
        self.images: Optional[torch.Tensor] = None  # [num_images, C, H, W] once something is stored
        self.num_images = 0

    @torch.no_grad()
    def query(self, images: torch.Tensor) -> torch.Tensor:
        """A batch of the same shape: the new images or, once full, about half from the history."""
        if self.pool_size == 0:
            return images
        images = images.detach()
        out = []
        for image in images:
            if self.num_images < self.pool_size:
                self._store(self.num_images, image)
                self.num_images += 1
                out.append(image)
            elif torch.rand((), generator=self.generator).item() > 0.5:
                slot = int(torch.randint(0, self.pool_size, (), generator=self.generator))
                out.append(self.images[slot].clone())
                self.images[slot] = image
            else:
                out.append(image)
        return torch.stack(out)

    def _store(self, slot: int, image: torch.Tensor) -> None:
        if self.images is None:
            self.images = torch.zeros((self.pool_size, *image.shape), dtype=image.dtype, device=self.device)
        self.images[slot] = image

    def state_dict(self) -> dict:
        """A flat dict of tensors (checkpoints store it as safetensors): the stored images, their
        count and the coin-flip generator's state."""
        stored = self.images[: self.num_images] if self.images is not None else torch.zeros(0)
        return {
            "pool_size": torch.tensor(self.pool_size),
            "num_images": torch.tensor(self.num_images),
            "generator": self.generator.get_state(),
            "images": stored.detach().cpu(),
        }

    def load_state_dict(self, state: dict) -> None:
        if int(state["pool_size"]) != self.pool_size:
            raise ValueError(
                f"the checkpoint's image pool holds {int(state['pool_size'])} images, this run {self.pool_size}"
            )
        self.generator.set_state(state["generator"])
        self.num_images = int(state["num_images"])
        if not self.num_images:
            self.images = None
            return
        stored = state["images"]
        self.images = torch.zeros((self.pool_size, *stored.shape[1:]), dtype=stored.dtype, device=self.device)
        self.images[: self.num_images] = stored.to(self.device)
