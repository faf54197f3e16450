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


# torch.Generator's default seed, so that an unseeded Generator() draws the same
# stream every run, as torch's does.
_DEFAULT_GENERATOR_SEED = 67280421310721


class Generator:
    """torch's ``Generator``: a seeded stream of random draws of its own,
    independent of ``manual_seed``'s (``flow.multinomial(p, n, generator=g)``,
    ``flow.randn(..., generator=g)``).

    Under the hood it is a NumPy ``Generator`` (PCG64) seeded with the seed:
    ``Generator().manual_seed(s)`` draws exactly what
    ``numpy.random.default_rng(s)`` draws, so a NumPy reference can replay
    its stream. NumPy's methods (``random``, ``integers``, ...) are
    available on it directly; ``numpy_generator`` returns the NumPy one."""

    def __init__(self, device="cpu"):
        self.device = device
        self.manual_seed(_DEFAULT_GENERATOR_SEED)

    def manual_seed(self, seed):
        """Restarts the stream from ``seed``; returns the generator."""
        self._seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self):
        """Reseeds from fresh entropy; returns the new seed."""
        seed = int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The stream's position (NumPy's bit-generator state, a dict)."""
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self

    def numpy_generator(self):
        return self._rng

    def __getattr__(self, name):
        # NumPy's draws (random, integers, standard_normal, ...), so that a
        # Generator works wherever the front end takes a NumPy generator.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._rng, name)

    def __repr__(self):
        return f"pipeflow.Generator(device={self.device!r}, seed={self._seed})"


def numpy_generator(generator=None):
    """The NumPy generator behind ``generator`` (a ``Generator``, a NumPy
    ``Generator``, or ``None``: ``manual_seed``'s)."""
    if generator is None:
        return _generator
    if isinstance(generator, Generator):
        return generator._rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"generator must be a pipeflow.Generator, got {type(generator).__name__}")
