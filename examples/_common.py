"""Shared by the examples: pick CUDA when a GPU is present, else the CPU (target="c", cython)."""

from __future__ import annotations

import os


def has_cuda() -> bool:
    if os.environ.get("TLTRACE_EXAMPLES_CPU"):
        return False
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def compile_kwargs() -> dict:
    """Return tilelang.compile keyword arguments for this machine."""
    if has_cuda():
        return {"target": "cuda", "execution_backend": os.environ.get("TLTRACE_EXAMPLES_BACKEND", "tvm_ffi")}
    return {"target": "c", "execution_backend": "cython"}


def device() -> str:
    return "cuda" if has_cuda() else "cpu"
