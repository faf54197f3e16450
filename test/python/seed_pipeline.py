"""The seeds' pipeline model (OneFlow seeds 001 and 003), which the tests
trace (test_graph.py), train in this process against the NumPy reference
(test_run.py, test_state.py) and launch on two ranks (test_run_launch.py):
the stages, pipeline module and graph of examples/python/_quickstart.py, the
examples' own, here on CPU placements.

Stage 0 (Flatten, Linear(784, 512), ReLU) on ``p0``, stage 1 (Linear(512,
512), ReLU, Linear(512, 10), ReLU and the loss) on ``p1``. The lines marked
``# <-- name`` in _quickstart.py (``QUICKSTART``) are where test_graph.py
expects the traced ops' locations.
"""

import os
import sys

import pipeflow as flow

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python")
sys.path.insert(0, EXAMPLES_DIR)
import _quickstart  # noqa: E402
from _quickstart import PipelineGraph, Stage0Module, Stage1Module  # noqa: E402, F401

QUICKSTART = os.path.abspath(_quickstart.__file__)
B = _quickstart.BROADCAST
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1])


class PipelineModule(_quickstart.PipelineModule):
    """The examples' pipeline module, stage 0 on ``p0`` and stage 1 on ``p1``."""

    def __init__(self, p0=P0, p1=P1):
        super().__init__(p0, p1)
