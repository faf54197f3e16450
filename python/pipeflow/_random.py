"""The numpy generator behind ``randn``/``randint`` and the parameter seed.

``manual_seed(s)`` seeds both: the numpy generator that ``randn``,
``randint`` and the eager initializers draw from, and the seed of the
compiled programs' counter-based parameter initialisation (``initial_seed``,
0 unless ``manual_seed`` was called).
"""

import numpy as np

_generator = np.random.default_rng()
_seed = 0


def manual_seed(seed):
    """Seeds the generator used by ``pipeflow.randn``, ``randint`` and parameter init."""
    global _generator, _seed
    seed = int(seed)
    _seed = seed & 0xFFFFFFFFFFFFFFFF
    _generator = np.random.default_rng(_seed)
    return _generator


def initial_seed():
    """The seed compiled graphs initialise their parameters with (``manual_seed``'s, default 0)."""
    return _seed


def default_generator():
    """The current numpy ``Generator``."""
    return _generator
