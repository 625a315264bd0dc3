"""Reverse-mode automatic differentiation of wick arrays (wick::autograd from Python).

    x = wick.asarray([1.0, 2.0, 3.0]).requires_grad_()
    y = wick.sum(x * x)
    y.backward()                # x.grad == 2 * x
    with wick.no_grad():        # nothing recorded on this thread inside
        x -= 0.1 * x.grad

An op records itself when grad mode is on and one of its inputs requires grad; backward() then
adds d(y)/d(leaf) into every leaf's ``.grad`` (accumulating, as PyTorch; clear it with
``x.grad = None`` or an optimizer's ``zero_grad()``). Backward runs without recording: no
gradients of gradients. core/include/wick/autograd.hpp lists the ops with a backward rule.
"""
import collections
import contextlib
import threading

from ._wick import autograd as _ag

__all__ = ["no_grad", "is_grad_enabled", "check_gradients", "GradCheck"]

_local = threading.local()


def is_grad_enabled():
    """Whether ops record for autograd on this thread (False inside ``no_grad``)."""
    return _ag.is_grad_enabled()


class no_grad(contextlib.ContextDecorator):
    """Turns autograd recording off on this thread for the ``with`` block (or the decorated
    function); nests. Other threads keep recording (wick::autograd::NoGradGuard)."""

    def __enter__(self):
        scope = _ag._NoGradScope()
        scope.enter()
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(scope)
        return self

    def __exit__(self, *exc):
        _local.stack.pop().exit()
        return False


GradCheck = collections.namedtuple("GradCheck", ["max_error", "worst"])


def check_gradients(fn, inputs, h=1e-6, seed=1):
    """Compares autograd with central differences of step ``h`` for ``fn(*inputs)`` (float arrays;
    float64 gives a meaningful answer). The loss is sum(fn(*inputs) * r) for a fixed random r.
    Returns GradCheck(max_error, worst): the largest |autograd - numeric| / (1 + |numeric|) and
    which element it was. The inputs are not modified."""
    err, worst = _ag.check_gradients(fn, list(inputs), h, seed)
    return GradCheck(err, worst)
