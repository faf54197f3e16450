"""What the compiler is told about a traced graph.

- :func:`compile_options`: the options recorded with the IR in the compile
  cache (stages, schedule, optimizers, ...), derived when the graph is traced.
- :func:`update_rules`: every parameter's update rule in the traced IR. The
  first optimizer's first group is the pipeline's options and reads the
  run-time scalar "lr"; the parameters of every other group (optimizer ``i``,
  group ``j``) carry a ``pf.optimizer`` dictionary with their own scalar
  "lr.o<i>.g<j>" and the settings that differ from the pipeline's.
- :func:`pipeline`: the options of ``pf-compile-cpu-pipeline`` when the graph
  runs (the first rule, micro-batches, schedule, automatic stages).
"""

from ... import config as config_mod
from ... import ir
from ..._errors import CompileError
from ...optim.optimizer import RUN_TIME_KEYS, pipeline_options, rule_overrides


def group_settings(group):
    """A parameter group's settings compiled into the step (all but the lr and
    the schedulers' entries, ``RUN_TIME_KEYS``)."""
    return tuple(sorted((k, repr(v)) for k, v in group.items()
                        if k != "params" and k not in RUN_TIME_KEYS))


def _optimizers(graph, tracer, all_names):
    """Each optimizer's description; every parameter it updates belongs to the
    graph and to no other of its optimizers."""
    symbols = {id(obj): name for name, obj in tracer.param_objects.items()}
    described, owners = [], {}
    for index, (optim, lr_sch, loc) in enumerate(graph._optimizers):
        if tracer.loss is None:
            raise CompileError.at(loc, "the graph has an optimizer but build() never calls loss.backward()")
        for group in optim.param_groups:
            for p in group["params"]:
                if id(p) not in all_names:
                    raise CompileError.at(
                        loc, f"the optimizer updates a parameter of shape {list(p.shape)} that belongs "
                             "to no module of this graph")
                first = owners.setdefault(id(p), index)
                if first != index:
                    other = graph._optimizers[first]
                    raise CompileError.at(
                        loc, f"parameter '{symbols.get(id(p), all_names[id(p)])}' is in two "
                             f"optimizers of {graph.name} ({type(other[0]).__name__} and "
                             f"{type(optim).__name__}); each parameter has one update rule",
                        [f"the other optimizer is added at {other[2]}",
                         "give each optimizer its own parameters"])
        described.append(optim.describe(lambda p: symbols.get(id(p), all_names[id(p)]), lr_sch))
    return described


def compile_options(graph, tracer, func):
    """The traced graph's options (written next to its IR in the compile cache)."""
    optimizers = _optimizers(graph, tracer, tracer.names)
    stages = []
    for stage in sorted(tracer.stage_locs):
        modules = sorted(cfg._name for _, cfg in graph._configs.values() if cfg.stage_id == stage)
        placements = sorted({
            op.results[0].type.placement.text() for op in func.ops
            if op.stage == stage and op.results})
        stages.append({"id": stage, "modules": modules, "placements": placements})
    cfg = graph.config
    return {
        "graph": graph.name,
        "function": func.name,
        "training": tracer.loss is not None,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "pipeline": {
            "schedule": cfg.pipeline_schedule,
            "num_chunks": cfg.num_chunks,
            "num_stages": cfg.pipeline_stages,
            "balance": cfg.balance,
            "auto_stages": bool(cfg.pipeline_stages is not None and not stages),
            "stages": stages,
        },
        "activation_checkpointing": sorted(
            c._name for _, c in graph._configs.values() if c.activation_checkpointing is True),
        "selective_checkpointing": sorted(
            c._name for _, c in graph._configs.values() if c.activation_checkpointing == "selective"),
        "optimizers": optimizers,
        "cuda_as_cpu": config_mod.cuda_as_cpu_enabled(),
        # Settings that reach only the compile pipeline's options: in the key
        # too, so that graphs differing in them get artifacts of their own
        # (one process cannot load two shared objects from one path).
        "zero": {"stage": cfg.zero_stage, "min_size": cfg.zero_min_size},
        "gradient_bucket_bytes": cfg.gradient_bucket_bytes,
        "generated_kernels": cfg.generated_kernels,
        "fuse_attention": cfg.fuse_attention,
        "amp": cfg.amp_dtype,
        "gradient_dtype": cfg.gradient_dtype,
        "sequence_parallel": cfg.sequence_parallel,
        "grad_scaler": graph._grad_scaler.kind if graph._grad_scaler is not None else None,
    }


def update_rules(graph, tracer):
    """Writes every parameter's update rule into the traced IR (see the module
    docstring); returns the run-time learning-rate scalars ``[(name, optimizer
    index, group index)]`` and the first setting the compiled step cannot
    apply (``(loc, message)``, raised when the graph runs) or ``None``."""
    rules = []
    for optim, _, loc in graph._optimizers:
        try:
            rules.append(optim.rules())
        except ValueError as err:
            return [], (loc, str(err))
    if not rules:
        return [], None
    params = tracer.module.params
    symbols = {id(obj): name for name, obj in tracer.param_objects.items()}
    default = rules[0][0]
    scalars = []
    for i, (optim, _, _) in enumerate(graph._optimizers):
        for j, group in enumerate(optim.param_groups):
            if (i, j) == (0, 0):
                scalars.append(("lr", 0, 0))
                continue
            name = f"lr.o{i}.g{j}"
            scalars.append((name, i, j))
            entries = rule_overrides(rules[i][j], default)
            attrs = {"kind": entries.pop("kind")} if "kind" in entries else {}
            attrs["lr"] = name
            for key, value in entries.items():
                attrs[key] = ir.F64(value) if isinstance(value, float) else value
            for p in group["params"]:
                param = params.get(symbols.get(id(p)))
                if param is not None and not param.buffer:
                    param.attrs["pf.optimizer"] = dict(attrs)
    # Frozen parameters (in no optimizer): plain SGD whose learning-rate
    # scalar nobody sets (it stays 0), so p - 0 * g leaves them as they are.
    updated = {id(p) for o, _, _ in graph._optimizers for g in o.param_groups for p in g["params"]}
    for name, obj in tracer.param_objects.items():
        param = params.get(name)
        if param is not None and not param.buffer and id(obj) not in updated:
            param.attrs["pf.optimizer"] = {
                "kind": "sgd", "lr": "lr.frozen", "momentum": ir.F64(0.0),
                "dampening": ir.F64(0.0), "weight_decay": ir.F64(0.0), "nesterov": False}
    return scalars, _clip_groups(graph, tracer, symbols)


def _clip_groups(graph, tracer, symbols):
    """Gradient clipping by global norm: each parameter group with
    ``clip_grad_max_norm`` and each ``nn.utils.clip_grad_norm_`` call in
    ``build`` is one clipping group (``clip_max_norm``, ``clip_group`` in the
    parameters' ``pf.optimizer``; pf-optimizer computes the norm over the
    group's logical gradients). Returns the first conflict as ``(loc,
    message)``, else ``None``."""
    params = tracer.module.params
    requests = [(group["params"], group["clip_grad_max_norm"], loc)
                for optim, _, loc in graph._optimizers for group in optim.param_groups
                if group.get("clip_grad_max_norm") is not None]
    requests += tracer.clip_requests
    for group_id, (members, max_norm, loc) in enumerate(requests, start=1):
        for p in members:
            name = symbols.get(id(p))
            param = params.get(name)
            if param is None or param.buffer:
                continue
            attrs = param.attrs.setdefault("pf.optimizer", {})
            if "clip_group" in attrs:
                return loc, (f"parameter '{name}' is clipped twice (by two parameter groups "
                             "with clip_grad_max_norm or clip_grad_norm_ calls); clip each "
                             "parameter once")
            attrs["clip_max_norm"] = ir.F64(max_norm)
            attrs["clip_group"] = group_id
    return None


def auto_placement(traced):
    """With automatic stages: the one placement of the traced program (as a
    pipeflow.placement), else ``None``."""
    if not traced.options["pipeline"].get("auto_stages"):
        return None
    for _, _, placement, _ in traced.signature[0]:
        return placement
    for obj in traced.param_objects.values():
        if obj.placement is not None:
            return obj.placement
    return None


def pipeline(graph, traced, loc):
    """The first optimizer, its scheduler and the options of
    ``pf-compile-cpu-pipeline``: that optimizer's first group's rule (the
    other groups' rules are on their parameters, see :func:`update_rules`)."""
    if traced.loss is None:
        return None, None, inference_pipeline(graph, traced, loc)
    if not graph._optimizers:
        raise CompileError.at(
            traced.loss_loc, f"{graph.name}.build() calls loss.backward() but the graph has no "
                             "optimizer", ["add one in __init__: self.add_optimizer(optimizer)"])
    optimizer, lr_scheduler, _ = graph._optimizers[0]
    if traced.rule_error is not None:
        raise CompileError.at(*traced.rule_error)
    check_schedules(graph)
    options = pipeline_options(optimizer.rules()[0])
    cfg = graph.config
    options.append(f"accumulation-steps={cfg.gradient_accumulation_steps}")
    options += schedule_options(graph, traced)
    options += forward_options(cfg, traced)
    if cfg.gradient_bucket_bytes is not None:
        options.append(f"bucket-bytes={cfg.gradient_bucket_bytes}")
    if cfg.zero_stage:
        options.append(f"zero-stage={cfg.zero_stage} zero-min-size={cfg.zero_min_size}")
    if cfg.gradient_dtype != "f32":
        options.append(f"gradient-dtype={cfg.gradient_dtype}")
    if graph._grad_scaler is not None:
        options.append(f"grad-scaler={graph._grad_scaler.kind}")
    return optimizer, lr_scheduler, " ".join(options)


def check_schedules(graph):
    """A CompileError (at the scheduler's line) when a learning-rate scheduler
    of an optimizer of the graph changes a setting the step compiles in
    (``compiled_conflict``: OneCycleLR cycling the momentum)."""
    for optim, lr_sch, loc in graph._optimizers:
        for scheduler in [lr_sch] + list(getattr(optim, "_schedulers", ())):
            check = getattr(scheduler, "compiled_conflict", None)
            found = check() if check is not None else None
            if found is not None:
                message, notes = found
                raise CompileError.at(getattr(scheduler, "_loc", None) or loc, message,
                                      list(notes) + [f"the optimizer is added to {graph.name} at {loc}"])


def inference_pipeline(graph, traced, loc):
    """pf-compile-cpu-pipeline's options for a graph without ``backward``: a
    forward-only program (``training=false``) of one micro-batch."""
    cfg = graph.config
    if not traced.function.results:
        raise CompileError.at(traced.function.return_loc,
                              f"{graph.name}.build() computes no loss and returns no tensor")
    if cfg.gradient_accumulation_steps != 1:
        raise CompileError.at(
            cfg._accumulation_loc,
            f"{graph.name} is an inference graph (build() never calls backward()): it has no "
            f"gradients to accumulate over {cfg.gradient_accumulation_steps} micro-batches",
            ["leave set_gradient_accumulation_steps unset in inference graphs"])
    return " ".join(["training=false", "accumulation-steps=1"] + forward_options(cfg, traced))


def forward_options(cfg, traced):
    """The options training and inference graphs share: automatic stages,
    generated kernels, attention fusion, mixed precision and sequence
    parallelism."""
    options = []
    if traced.options["pipeline"].get("auto_stages"):
        options.append(f"auto-stages={cfg.pipeline_stages} balance={cfg.balance}")
    if cfg.generated_kernels:
        options.append("generated-kernels=true")
    if not cfg.fuse_attention:
        options.append("fuse-attention=false")
    if cfg.amp_dtype:
        options.append(f"autocast={cfg.amp_dtype}")
    if cfg.sequence_parallel:
        options.append("sequence-parallel=true")
    return options


def schedule_options(graph, traced):
    """``schedule=...`` (and ``num-chunks``): the configured schedule when the
    user chose one; by default 1F1B when every stage has ranks of its own,
    else the plain micro-batch order (one rank holding several stages, as
    in a single-process run of a pipeline, cannot follow a schedule)."""
    cfg = graph.config
    if traced.options["pipeline"].get("auto_stages"):
        # pf-auto-stages puts the stages on ranks of their own (the chunks
        # of interleaved 1F1B share them, as that schedule expects).
        if cfg._schedule_loc is None:
            return [f"schedule={'1f1b' if cfg.pipeline_stages > 1 else 'none'}"]
        return _chosen_schedule(cfg)
    ranks = {}
    for op in traced.ops:
        if op.stage is not None and op.results and isinstance(op.results[0].type, ir.GlobalType):
            ranks.setdefault(op.stage, set()).update(op.results[0].type.placement.ranks)
    shared = sorted({r for s, rs in ranks.items() for r in rs
                     if any(r in other for t, other in ranks.items() if t != s)})
    if cfg._schedule_loc is None:
        return [f"schedule={'1f1b' if len(ranks) > 1 and not shared else 'none'}"]
    if cfg.pipeline_schedule != "interleaved-1f1b" and shared:
        holders = sorted(s for s, rs in ranks.items() if shared[0] in rs)
        raise CompileError.at(
            cfg._schedule_loc,
            f"the {cfg.pipeline_schedule} schedule needs every pipeline stage on ranks of its "
            f"own, but stages {', '.join(map(str, holders))} are all on rank {shared[0]}",
            ["place the stages on different ranks, or leave the schedule unset (the "
             "micro-batches then run in order)"])
    return _chosen_schedule(cfg)


def _chosen_schedule(cfg):
    out = [f"schedule={cfg.pipeline_schedule}"]
    if cfg.pipeline_schedule == "interleaved-1f1b":
        out.append(f"num-chunks={cfg.num_chunks}")
    return out
