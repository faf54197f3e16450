"""The results of an inference graph's step (``build`` without ``backward``).

The compiled forward-only program reports each result's local data on the
ranks that hold it (``pfrt_report_output(index, data, bytes)``, read back
with ``pfrt_output_*``; see ``pipeflow._runtime.Program.outputs``). A
program whose lowering predates that entry point reports the elements of
its first result through ``pfrt_report_loss`` instead; that covers one
float32 result, which is what such programs can return.

The results come back as OneFlow returns them: global tensors on their
traced placement (broadcast SBP on a single-rank placement), holding their
value on the ranks of that placement and an empty local elsewhere; a local
graph (``pipeflow.nn._graph.tracing``) returns local tensors.
"""

import numpy as np

from ... import sbp as sbp_mod
from ..._errors import BackendUnavailable
from ...tensor import Tensor

NEEDS_REPORT_OUTPUT = (
    "the compiled program reports only its first result (the lowering does not call "
    "pfrt_report_output yet)")


def _local_arrays(run, losses):
    """``{result index: this rank's bytes}`` of the last step."""
    reported = run.program.outputs() if run.program is not None else {}
    if reported:
        return reported
    results = run.traced.function.results
    if len(losses) and results:
        return {0: np.ascontiguousarray(losses, np.float32).view(np.uint8)}
    return {}


def collect(run, losses):
    """The results of the step just run, as tensors in the function's order."""
    arrays = _local_arrays(run, losses)
    tensors = []
    for index, (dtype, shape, placement) in enumerate(run.traced.result_meta):
        if placement.size != 1:
            raise BackendUnavailable(
                f"{run.graph_name}: result {index} of build() is on the placement "
                f"{placement.ranks} of several ranks; returning such results needs their "
                "compiled SBP and every rank's part (not supported yet)")
        sbp = sbp_mod.normalize([sbp_mod.broadcast] * placement.ndim, placement.ndim)
        data = arrays.get(index)
        if data is None:
            if run.rank in placement.flat_ranks and run.program is not None:
                raise BackendUnavailable(
                    f"{run.graph_name}: rank {run.rank} holds result {index} of build() but the "
                    f"compiled program did not report it ({NEEDS_REPORT_OUTPUT})")
            tensors.append(Tensor._new(dtype, shape, local=np.empty((0,), dtype.numpy), logical=None,
                                       placement=placement, sbp=sbp))
            continue
        array = data.view(dtype.numpy)
        if array.size != int(np.prod(shape, dtype=np.int64)):
            raise BackendUnavailable(
                f"internal error: {run.graph_name}: result {index} has {array.size} elements on "
                f"rank {run.rank}, expected {list(shape)}")
        array = array.reshape(shape).copy()
        tensors.append(Tensor._new(dtype, shape, local=array, logical=array,
                                   placement=placement, sbp=sbp))
    return tensors
