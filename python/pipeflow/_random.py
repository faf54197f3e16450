"""The numpy generator behind ``randn``/``randint`` (seeded by ``manual_seed``)."""

import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed):
    """Seeds the generator used by ``pipeflow.randn``, ``randint`` and parameter init."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator():
    """The current numpy ``Generator``."""
    return _generator
