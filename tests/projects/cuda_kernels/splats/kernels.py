"""Builds the renderer's CUDA kernels when training starts."""

import os

from torch.utils.cpp_extension import load

here = os.path.dirname(os.path.abspath(__file__))
raster_sources = ["csrc/raster.cpp", "csrc/raster_kernel.cu"]

raster_cuda = None


def init():
    global raster_cuda
    raster_cuda = load(
        name="raster_cuda",
        sources=[os.path.join(here, path) for path in raster_sources],
    )
