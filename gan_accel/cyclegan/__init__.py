"""CycleGAN (Zhu et al. 2017): unpaired image-to-image translation with two generators and two
discriminators, as a recipe on the training engine. Components live in small modules: models,
losses, pool (image history), schedule, sampler and data (unpaired domains), digits_pair (the
offline demo pair), evaluate (FID and class preservation), samples (grids), export, translate."""

from .models import PatchDiscriminator, ResnetGenerator
from .pool import ImagePool

__all__ = ["ImagePool", "PatchDiscriminator", "ResnetGenerator"]
