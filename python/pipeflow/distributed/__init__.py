"""``pipeflow.distributed``: the launcher (``python3 -m pipeflow.distributed.launch``)."""
