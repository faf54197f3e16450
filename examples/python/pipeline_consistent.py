"""Seed 000: the pipeline example in OneFlow's older API.

``flow.placement("cuda", {0: [1]})`` (node -> devices), ``to_consistent`` and
``config.stage_id = k`` (chosen in _quickstart.py's shared pipeline module
and graph); otherwise the same program as ``pipeline.py``. From the
repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/pipeline_consistent.py
"""

import _common
from _quickstart import PipelineGraph, PipelineModule

import pipeflow as flow

parser = _common.parser(__doc__)
args = parser.parse_args()

BATCH_SIZE = 16
BROADCAST = [flow.sbp.broadcast]
P0 = flow.placement("cuda", {0: [0]})
P1 = flow.placement("cuda", {0: [1]})

module_pipeline = PipelineModule(P0, P1, consistent=True)
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.001)
graph_pipeline = PipelineGraph(module_pipeline, sgd, style="stage_id")

x = flow.randn(BATCH_SIZE, 1, 28, 28).to_consistent(P0, BROADCAST)
y = flow.randint(0, 10, (BATCH_SIZE,)).to_consistent(P1, BROADCAST)

_common.train_or_print_ir(args, graph_pipeline, x, y)
