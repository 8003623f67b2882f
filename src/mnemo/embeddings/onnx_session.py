"""An onnxruntime session for a local model file, set up the one way every model mnemo runs needs (MiniLM's
large batches, the cross-encoder of deep recall): few threads, no spinning, no telemetry."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mnemo.errors import ConfigError


def open_onnx_session(model: Path | bytes, threads: int) -> Any:
    """An onnxruntime session on ``model`` (a model file, or a model's bytes), using at most ``threads`` threads,
    set up for a small machine shared with other work."""
    # Left on, onnxruntime writes a device id and a telemetry database under ~/.cache/Microsoft on import:
    # files outside mnemo's home that nobody asked for. Off unless the process already chose otherwise.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        import onnxruntime
    except ImportError as exc:
        raise ConfigError(
            f"running a local model needs the package onnxruntime ({exc.name} is missing): "
            "reinstall mnemo or pip install onnxruntime"
        ) from exc
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    # Spin-waiting workers burn the CPU that the caller's other threads (and other processes on a small
    # machine) need between calls; measured here, it made latency worse under load, never better.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    source = model if isinstance(model, bytes) else str(model)
    return onnxruntime.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
