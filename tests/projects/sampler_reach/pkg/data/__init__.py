from .sets import LengthSet
from .samplers import BucketSampler

__all__ = ["BucketSampler", "LengthSet"]
