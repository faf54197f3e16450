"""``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode``.

Gradients exist only inside a compiled training step (``loss.backward()``
in ``nn.Graph.build``), never on eager tensors, so these only mark code as
gradient-free, as torch's do (nanoGPT's ``@torch.no_grad() def generate``):
context managers and decorators that change nothing.
"""

import contextlib


class _GradMode(contextlib.ContextDecorator):
    """A context manager that is also a decorator (``@flow.no_grad()``); it
    holds no state, so one object may be entered again and again."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class no_grad(_GradMode):  # noqa: N801 (torch's names)
    """``with flow.no_grad():`` or ``@flow.no_grad()``."""


class enable_grad(_GradMode):  # noqa: N801
    """``with flow.enable_grad():`` or ``@flow.enable_grad()``."""


class set_grad_enabled(_GradMode):  # noqa: N801
    """``with flow.set_grad_enabled(mode):``."""

    def __init__(self, mode):
        self.mode = bool(mode)


class inference_mode(_GradMode):  # noqa: N801
    """``with flow.inference_mode():`` or ``@flow.inference_mode()``."""

    def __init__(self, mode=True):
        self.mode = bool(mode)
