"""``pipeflow.nn.utils``: gradient clipping inside ``nn.Graph.build``.

``clip_grad_norm_(parameters, max_norm)`` called in ``build`` after
``loss.backward()`` makes the compiled step scale the parameters' gradients
by ``min(1, max_norm / (norm + 1e-6))`` before the update, with ``norm``
the L2 norm of all their logical gradients together (as
``torch.nn.utils.clip_grad_norm_``), on any layout: pf-optimizer reduces
split and partial gradients across ranks and pipeline stages. OneFlow's
parameter-group option ``clip_grad_max_norm`` does the same per group.
The norm itself stays inside the step: the call returns ``None``.
"""

import numbers

from .. import _trace
from .._errors import BackendUnavailable
from .._source import user_location
from ..tensor import Tensor


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Clips the gradients of ``parameters`` by their global L2 norm in the
    compiled step (see the module docstring)."""
    tracer = _trace.current()
    if tracer is None:
        raise BackendUnavailable(
            "clip_grad_norm_ outside nn.Graph.build(): gradients exist only inside the compiled "
            "step; call it in build() after loss.backward(), or set clip_grad_max_norm in a "
            "parameter group")
    if tracer.loss is None:
        _trace.fail("clip_grad_norm_ needs the gradients: call it after loss.backward()")
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not max_norm > 0:
        _trace.fail(f"clip_grad_norm_: max_norm must be a positive number, got {max_norm!r}")
    if float(norm_type) != 2.0:
        _trace.fail(f"clip_grad_norm_: norm_type={norm_type} is not supported by the compiled "
                    "step (the L2 norm, 2.0, is)")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    tracer.clip_requests.append((params, float(max_norm), user_location()))
    return None
