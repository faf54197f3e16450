"""Pipeline-parallel training of the quick-start MLP (OneFlow seeds 001 and 003).

Stage 0 (Flatten, Linear(784, 512), ReLU) runs on rank 0, stage 1 (the
rest and the loss) on rank 1, with 2 micro-batches per step. From the
repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/pipeline.py

trains 20 steps on two CPU ranks; each rank prints ``loss.to_local()``: the 2
micro-batch losses on rank 1, an empty tensor on rank 0. ``--compile-only``
stops after tracing and verifying the step with pf-opt and prints the IR.
``--graph-module`` uses seed 003's ``.to(nn.graph.GraphModule).set_stage``.
The program is the seed's apart from the imports (the seed's stage
modules, pipeline module and graph are in _quickstart.py, which
pipeline_consistent.py and the front-end tests share) and the device mapping (``PIPEFLOW_CUDA_AS_CPU=1`` runs the "cuda" placements on CPUs).
"""

import _common
from _quickstart import PipelineGraph, PipelineModule

import pipeflow as flow

parser = _common.parser(__doc__)
parser.add_argument("--graph-module", action="store_true", help="seed 003's GraphModule spelling of set_stage")
args = parser.parse_args()

BATCH_SIZE = 16
BROADCAST = [flow.sbp.broadcast]
P0 = flow.placement("cuda", ranks=[0])
P1 = flow.placement("cuda", ranks=[1])

module_pipeline = PipelineModule(P0, P1)
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.001)
graph_pipeline = PipelineGraph(module_pipeline, sgd, style="graph_module" if args.graph_module else "set_stage")

x = flow.randn(BATCH_SIZE, 1, 28, 28)
x = x.to_global(P0, BROADCAST)
y = flow.randint(0, 10, (BATCH_SIZE,))
y = y.to_global(P1, BROADCAST)

_common.train_or_print_ir(args, graph_pipeline, x, y)
