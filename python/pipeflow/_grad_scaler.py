"""Loss scaling for float16: ``flow.amp.GradScaler`` and ``flow.amp.StaticGradScaler``.

``graph.set_grad_scaler(scaler)`` compiles the step with pf-optimizer's
``grad-scaler`` option: the loss's gradient is seeded with the run-time
scalar ``loss_scale`` (the returned loss is not scaled), every gradient is
multiplied by ``inv_loss_scale`` before clipping and the update. Both are
run-time scalars, as the learning rate: changing the scale recompiles
nothing.

A :class:`GradScaler` (dynamic, torch's and OneFlow's rules) also makes the
step compute one found-inf flag over every gradient (agreed by every rank:
one reduction in the global view); a step that finds a non-finite gradient
updates nothing (parameters and optimizer states keep their bits, the step
counter still advances, as OneFlow's train step) and the scale is multiplied
by ``backoff_factor``; after ``growth_interval`` consecutive clean steps it is
multiplied by ``growth_factor``. A :class:`StaticGradScaler` keeps its scale
and, as OneFlow's static loss scale, checks nothing (a non-finite gradient
reaches the update).

The scale and the count of clean steps are the graph's state:
``state_dict()`` carries them under :data:`SCALE_KEY` and
:data:`GROWTH_KEY`, and checkpoints with them.
"""

import numpy as np

SCALE_KEY = "System-Train-GradScaler-Scale"
GROWTH_KEY = "System-Train-GradScaler-GrowthTracker"
KEYS = (SCALE_KEY, GROWTH_KEY)


class GradScaler:
    """Dynamic loss scaling (``oneflow.amp.GradScaler``)."""

    kind = "dynamic"

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000):
        if not init_scale > 0:
            raise ValueError(f"GradScaler: init_scale must be > 0, got {init_scale}")
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        if int(growth_interval) < 1:
            raise ValueError(f"GradScaler: growth_interval must be >= 1, got {growth_interval}")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self.found_inf = False  # whether the last step was skipped

    def get_scale(self):
        return self._scale

    def scalars(self):
        """The run-time scalars of the next step."""
        scale = np.float32(self._scale)
        return {"loss_scale": float(scale), "inv_loss_scale": float(np.float32(1.0) / scale)}

    def update(self, found_inf):
        """torch's ``_amp_update_scale_``: back off on overflow, grow after
        ``growth_interval`` clean steps."""
        self.found_inf = bool(found_inf)
        if self.found_inf:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
            return
        self._growth_tracker += 1
        if self._growth_tracker == self._growth_interval:
            self._scale *= self._growth_factor
            self._growth_tracker = 0

    def state_dict(self):
        return {"scale": self._scale, "growth_tracker": self._growth_tracker}

    def load_state_dict(self, state):
        self._scale = float(state["scale"])
        self._growth_tracker = int(state["growth_tracker"])


class StaticGradScaler(GradScaler):
    """A fixed loss scale (``oneflow.amp.StaticGradScaler``): no found-inf
    check, no skipped step, the scale never changes."""

    kind = "static"

    def __init__(self, scale_factor):
        if not scale_factor > 0:
            raise ValueError(f"StaticGradScaler: the scale must be > 0, got {scale_factor}")
        super().__init__(init_scale=scale_factor)

    def update(self, found_inf):
        self.found_inf = False
