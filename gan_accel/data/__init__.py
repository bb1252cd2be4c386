"""Data: images for GANs (in-memory uint8 tensors) and the resumable sampler both paths use."""
from .images import DATASETS, IMAGE_EXTENSIONS, ImageData, load_image_data, to_float_images
from .sampler import ResumableSampler

__all__ = ["DATASETS", "IMAGE_EXTENSIONS", "ImageData", "ResumableSampler", "load_image_data", "to_float_images"]
