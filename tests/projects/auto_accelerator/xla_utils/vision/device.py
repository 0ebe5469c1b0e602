import torch_xla.core.xla_model as xm


def ordinal():
    return xm.get_ordinal()
