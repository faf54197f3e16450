"""``nn.Graph.config``: graph-wide settings (micro-batches, the pipeline
schedule, automatic stages, gradient buckets, generated kernels)."""

import numbers
import operator

from ... import amp
from ... import dtypes as dt
from ..._source import user_location

SCHEDULES = ("gpipe", "1f1b", "interleaved-1f1b", "zb-h1")
BALANCES = ("flops", "params", "memory")


def _number(value, kind, lowest, what):
    """``value`` if it is a ``kind`` (bools are not) of at least ``lowest``,
    else a ValueError saying what was wanted."""
    if isinstance(value, bool) or not isinstance(value, kind) or value < lowest:
        raise ValueError(f"{what}, got {value!r}")
    return value


def setting(field, doc=None):
    """A read-only property returning ``self.<field>`` (which a method of
    the class sets)."""
    return property(operator.attrgetter(field), doc=doc)


class GraphConfig:
    """Graph-wide settings: micro-batches and the pipeline schedule.

    The class attributes are the defaults; a ``set_*`` method sets its
    setting on the instance, with the caller's location (``_*_loc``) where
    a later check may report it."""

    _accumulation, _accumulation_loc = 1, None
    _schedule, _num_chunks, _schedule_loc = "1f1b", 1, None
    _num_stages, _balance, _stages_loc = None, None, None
    _generated_kernels = False
    _fuse_attention = True
    _bucket_mbytes = None
    _zero_stage, _zero_min_size = 0, 1024
    _amp = None
    _gradient_dtype = "f32"
    _device_memory, _device_memory_loc, _device_memory_set = None, None, False
    _sequence_parallel, _sequence_parallel_loc = False, None

    def set_gradient_bucket_mbytes(self, mbytes):
        """Packs the update's gradient all-reduces into buckets of at most
        ``mbytes`` MiB (``pf-bucket-gradients``; PyTorch DDP's
        ``bucket_cap_mb``); 0 reduces each gradient on its own. The
        default is 25."""
        self._bucket_mbytes = _number(mbytes, numbers.Real, 0,
                                      "gradient bucket size must be a non-negative number of MiB")

    @property
    def gradient_bucket_bytes(self):
        """The bucket size in bytes, or ``None`` for the compiler's default."""
        if self._bucket_mbytes is None:
            return None
        return int(self._bucket_mbytes * (1 << 20))

    def enable_generated_kernels(self, mode=True):
        """Runs the element-wise ops (ReLU, GELU, tanh, sigmoid, their
        gradients, add, mul) through the compiler's generated kernels, the
        host twins of its GPU kernels, instead of the runtime library's."""
        self._generated_kernels = bool(mode)

    generated_kernels = setting("_generated_kernels")

    def enable_fuse_attention(self, mode=True):
        """Rewrites attention written as ``softmax(q @ k^T * s) @ v`` (with
        a causal or other mask, and dropout) as one fused op, as
        ``F.scaled_dot_product_attention`` traces it: no [T, S] scores in
        memory (the compiler's ``pf-fuse-attention``). On by default."""
        self._fuse_attention = bool(mode)

    fuse_attention = setting("_fuse_attention")

    def enable_zero(self, mode=True, *, stage=1, shard_min_size=1024, shard_restore_level=1):
        """ZeRO over the data-parallel axes (OneFlow's spelling): on every
        axis of a parameter's placement where it is replicated, ``stage`` 1
        splits its optimizer states, 2 also its gradients (reduce-scattered
        instead of all-reduced), 3 also the parameter itself. Parameters of
        fewer than ``shard_min_size`` elements stay replicated.
        ``shard_restore_level`` is accepted for OneFlow's programs: where a
        sharded parameter is gathered back is decided by SBP inference."""
        if not mode:
            self._zero_stage = 0
            return
        if isinstance(stage, bool) or stage not in (1, 2, 3):
            raise ValueError(f"ZeRO stage must be 1, 2 or 3, got {stage!r}")
        self._zero_min_size = int(_number(shard_min_size, numbers.Integral, 0,
                                          "shard_min_size must be a non-negative integer"))
        _number(shard_restore_level, numbers.Integral, 0,
                "shard_restore_level must be a non-negative integer")
        self._zero_stage = int(stage)

    zero_stage = setting("_zero_stage", "The ZeRO stage (0: off).")

    def enable_sequence_parallel(self, mode=True):
        """Megatron-LM's sequence parallelism (off by default, as in
        Megatron): in a tensor-parallel model, layer norm, dropout and the
        residual stream stay split along the sequence over the
        tensor-parallel axis, so a row-parallel layer's partial sum is
        reduce-scattered instead of all-reduced and all-gathered before the
        next column-parallel layer: the same bytes moved, 1/TP of those
        regions' activation memory. Layer norms' parameter gradients become
        partial sums, all-reduced with the other gradients. The sequence is
        the axis before the last ([batch, sequence, hidden]); a graph with
        no tensor-parallel layer, or whose sequence does not divide over
        the tensor-parallel ranks, is a CompileError (the compiler's
        ``sequence-parallel``)."""
        self._sequence_parallel = bool(mode)
        self._sequence_parallel_loc = user_location()

    sequence_parallel = setting("_sequence_parallel")

    def enable_amp(self, mode=True, *, dtype=None):
        """Mixed precision (OneFlow's spelling): GEMMs in ``dtype``
        (``flow.float16`` by default, as OneFlow; or ``flow.bfloat16``),
        softmax, norms, reductions and the loss in float32, element-wise
        ops in their operands' type (the compiler's ``pf-autocast``).
        Parameters, gradients and optimizer states stay float32."""
        self._amp = amp.low_dtype(dtype).mlir if mode else None

    @property
    def amp_dtype(self):
        """``"bf16"``, ``"f16"`` or ``None`` (float32)."""
        return self._amp
    zero_min_size = setting("_zero_min_size")

    def set_gradient_dtype(self, dtype):
        """The type the data-parallel gradient all-reduces (under ZeRO
        stage 2 or 3, reduce-scatters) move: ``flow.float32`` (the
        default), or ``flow.bfloat16`` / ``flow.float16`` (half the
        bytes): each rank rounds its float32 gradient to that type, the
        ranks sum in it (each pairwise sum in float32, rounded to nearest
        even) and the sum (or the rank's shard of it) is widened back;
        gradients, their buffers and optimizer states stay float32 (the
        compile pipeline's ``gradient-dtype``)."""
        dtype = dt.as_dtype(dtype)
        if dtype not in dt.LOW + (dt.float32,):
            raise ValueError("gradients are all-reduced in flow.float32, flow.bfloat16 or "
                             f"flow.float16, not {dtype}")
        self._gradient_dtype = dtype.mlir

    gradient_dtype = setting("_gradient_dtype", 'The gradient reductions\' type: "f32", "bf16" or "f16".')

    def set_device_memory(self, nbytes):
        """The memory of each rank's device in bytes: compiling a program
        whose memory plan needs more on some rank is a CompileError naming
        the rank and its plan by category (``None``: no limit). Unset, a
        program for GPU ranks is checked against the GPUs' own memory
        (``pipeflow.config.gpu_memory``), one for CPU ranks is not checked."""
        if nbytes is not None:
            nbytes = int(_number(nbytes, numbers.Integral, 1,
                                 "device memory must be a positive number of bytes"))
        self._device_memory, self._device_memory_loc = nbytes, user_location()
        self._device_memory_set = True

    device_memory = setting("_device_memory")

    def set_gradient_accumulation_steps(self, value):
        """Splits every step's batch into ``value`` micro-batches."""
        self._accumulation = int(_number(value, numbers.Integral, 1,
                                         "gradient accumulation steps must be a positive integer"))
        self._accumulation_loc = user_location()

    gradient_accumulation_steps = setting("_accumulation")

    def set_pipeline_schedule(self, schedule, num_chunks=1):
        """One of ``gpipe``, ``1f1b``, ``interleaved-1f1b`` (``num_chunks`` virtual
        chunks per stage) or ``zb-h1``."""
        name = str(schedule).lower()
        if name not in SCHEDULES:
            raise ValueError(f"unknown pipeline schedule {schedule!r}; expected one of {', '.join(SCHEDULES)}")
        _number(num_chunks, numbers.Integral, 1, "num_chunks must be a positive integer")
        if name != "interleaved-1f1b" and num_chunks != 1:
            raise ValueError(f"num_chunks={num_chunks} needs the 'interleaved-1f1b' schedule, not {name!r}")
        self._schedule, self._num_chunks = name, int(num_chunks)
        self._schedule_loc = user_location()

    pipeline_schedule = setting("_schedule")
    num_chunks = setting("_num_chunks")

    def set_pipeline_stages(self, num_stages, balance="flops"):
        """Asks the compiler to split the model into ``num_stages`` balanced stages.

        With no module's stage set, the graph (everything on one placement P)
        is traced without stages and pf-auto-stages cuts it into
        ``num_stages`` (x ``num_chunks`` under interleaved 1F1B) contiguous
        stages of balanced ``balance`` (``flops``, ``params`` or ``memory``)
        cost; pipeline rank ``k`` runs on P shifted by ``k * (max rank of P +
        1)``, so the job needs that many more processes. With explicit stages
        it must agree with their number."""
        _number(num_stages, numbers.Integral, 1,
                "the number of pipeline stages must be a positive integer")
        if balance not in BALANCES:
            raise ValueError(f"unknown stage balance {balance!r}; expected one of {', '.join(BALANCES)}")
        self._num_stages, self._balance = int(num_stages), balance
        self._stages_loc = user_location()

    pipeline_stages = setting("_num_stages")
    balance = setting("_balance")

    def __repr__(self):
        return (f"GraphConfig(gradient_accumulation_steps={self._accumulation}, "
                f"schedule={self._schedule!r}, num_chunks={self._num_chunks}, "
                f"pipeline_stages={self._num_stages}, balance={self._balance!r}, "
                f"zero_stage={self._zero_stage}, amp={self._amp!r}, "
                f"gradient_dtype={self._gradient_dtype!r}, "
                f"sequence_parallel={self._sequence_parallel})")
