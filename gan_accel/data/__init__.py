"""Data: images for GANs (in memory as uint8 tensors, or streamed from a decode cache: see
:mod:`.source`) and the resumable sampler every path uses."""

from .images import DATASETS, IMAGE_EXTENSIONS, ImageData, load_image_data, to_float_images
from .sampler import ResumableSampler

__all__ = ["DATASETS", "IMAGE_EXTENSIONS", "ImageData", "ResumableSampler", "load_image_data", "to_float_images"]
