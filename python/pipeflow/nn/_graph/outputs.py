"""The results of an inference graph's step (``build`` without ``backward``).

The compiled forward-only program reports each result's local data on the
ranks that hold it (``pfrt_report_output(index, data, bytes)``, read back
with ``pfrt_output_*``; see ``pipeflow._runtime.Program.outputs``). A
program whose lowering predates that entry point reports the elements of
its first result through ``pfrt_report_loss`` instead; that covers one
float32 result, which is what such programs can return.

The results come back as OneFlow returns them: global tensors on their
traced placement with the SBP the compiler gave them (read from every
rank's manifest entry, ``pfrt.outputs``; broadcast on a single-rank
placement), each rank of the placement holding its own local part and the
other ranks an empty one; a local graph (``pipeflow.nn._graph.tracing``)
returns local tensors.
"""

import numpy as np

from ... import dtypes
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


def _manifest_entries(run, index, placement):
    """``{rank: manifest outputs entry}`` of result ``index`` (pfrt.outputs)."""
    found = {}
    for r in placement.flat_ranks:
        entry = run.artifacts.rank(r) or {}
        for out in entry.get("outputs") or ():
            if out.get("index") == index:
                found[r] = out
    return found


def _compiled_layout(run, index, placement):
    """``(sbp, {rank: local shape})`` of result ``index`` as compiled: every
    rank of the placement records it in the manifest (pfrt.outputs)."""
    sbp, shapes = None, {}
    for r, out in _manifest_entries(run, index, placement).items():
        sbp = sbp or out.get("sbp")
        shapes[r] = tuple(out.get("local_shape") or ())
    if not sbp:
        raise BackendUnavailable(
            f"internal error: {run.graph_name}: the manifest does not record the layout of "
            f"result {index} of build()")
    return sbp_mod.normalize(sbp_mod.parse(sbp), placement.ndim), shapes


def collect_extras(run):
    """A training step's results besides the loss, as ``{result index:
    tensor}`` (empty when ``build`` returns only the loss). With m
    micro-batches each comes back stacked: ``[m, *shape]``, like the loss's
    ``[m]``."""
    traced = run.traced
    if len(traced.leaf_results) <= 1 and all(j == 0 for j in traced.leaf_results):
        return {}
    arrays = run.program.outputs() if run.program is not None else {}
    out = {}
    for leaf, j in enumerate(traced.leaf_results):
        if j == 0:
            continue
        dtype, shape, placement = traced.result_meta[leaf]
        compiled = next(iter(_manifest_entries(run, j, placement).values()), {})
        shape = tuple(compiled.get("shape", shape))  # [m, ...] when packed
        out[j] = _tensor(run, j, arrays.get(j), dtype, shape, placement)
    return out


def _tensor(run, index, data, dtype, shape, placement):
    """Result ``index`` as a global tensor from this rank's bytes (``None``:
    this rank holds none of it)."""
    inside = run.rank in placement.flat_ranks
    if placement.size == 1:
        sbp = sbp_mod.normalize([sbp_mod.broadcast] * placement.ndim, placement.ndim)
        local_shape = shape
    else:
        sbp, shapes = _compiled_layout(run, index, placement)
        local_shape = shapes.get(run.rank, shape)
    if data is None:
        if inside and run.program is not None:
            raise BackendUnavailable(
                f"{run.graph_name}: rank {run.rank} holds result {index} of build() but the "
                f"compiled program did not report it ({NEEDS_REPORT_OUTPUT})")
        return Tensor._new(dtype, shape, local=np.empty((0,), dtype.numpy), logical=None,
                           placement=placement, sbp=sbp)
    array = dtypes.from_bfloat16_bits(data.view(np.uint16)) if dtype is dtypes.bfloat16 \
        else data.view(dtype.numpy)
    if array.size != int(np.prod(local_shape, dtype=np.int64)):
        raise BackendUnavailable(
            f"internal error: {run.graph_name}: result {index} has {array.size} elements on "
            f"rank {run.rank}, expected {list(local_shape)}")
    array = array.reshape(local_shape).copy()
    whole = all(e == sbp_mod.broadcast for e in sbp)
    return Tensor._new(dtype, shape, local=array, logical=array if whole else None,
                       placement=placement, sbp=sbp)


def collect(run, losses):
    """The results of the step just run, as tensors in the function's order.

    A result on several ranks comes back as OneFlow's global tensors do:
    with the SBP the compiler chose, each rank holding its own local part
    (``to_local()``); its logical value (``numpy()``) is known where the
    layout gives every rank all of it (all-B)."""
    arrays = _local_arrays(run, losses)
    return [_tensor(run, index, arrays.get(index), dtype, shape, placement)
            for index, (dtype, shape, placement) in enumerate(run.traced.result_meta)]
