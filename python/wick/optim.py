"""Optimizers over a model's parameters (wick::optim), with PyTorch's update formulas.

    opt = wick.optim.Adam(store.parameters(), lr=1e-3)
    opt.zero_grad(); loss.backward(); opt.step()

``step()`` updates each parameter that has a gradient in place, without recording (the layers
holding it see the new values) and with the GIL released. ``lr`` is a settable property.
"""
from ._wick import optim as _optim

Optimizer = _optim.Optimizer
SGD = _optim.SGD
Adam = _optim.Adam
AdamW = _optim.AdamW

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
