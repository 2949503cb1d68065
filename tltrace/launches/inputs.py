"""`run --save-inputs[=N]`: the tensor arguments of the first N launches, before and after each.

On the launching thread, at the call's start (launches/observer.py, before `JITKernel.__call__`
runs), each torch.Tensor argument is copied to host memory; when the call returns, the same
tensors are copied again, with the tensors it returned (the outputs its adapter allocates).
The late worker (session/worker.py) writes them as NumPy .npy files (`allow_pickle=False`:
data, never code) under `<script>/.run_records/inputs.<invocation id>/`, and appends one line
per launch to its `index.jsonl`:

    {"pid", "t" (the launch line's time: format/launches.py), "launch": its number in the
     process (1..), "kernel", "args": [ARG], "returned": [ARG]}
    ARG: {"index", "shape", "dtype" (torch's name), "stored" (the .npy dtype), "before",
          "before_sha256", "after", "after_sha256"}  ("before" only for an argument)
    a launch not saved: {"pid", "t", "launch", "kernel", "skipped": why}

A dtype NumPy lacks (bfloat16, float8) is stored as the unsigned integers of its size, bit for
bit. The bytes kept per process are at most `Settings.save_inputs_max`: a launch that would pass
it is counted in the index (`skipped`), not saved. Nothing here raises into the user's script.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from ..config import Settings
from ..format import launches as log_format
from ..format.layout import RUN_RECORDS

_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


class InputSaver:
    """The saved arguments of one process's first `settings.save_inputs` launches."""

    def __init__(self, settings: Settings, tensor: Any, submit: Callable[[Callable[[], None]], None]) -> None:
        self.settings = settings
        self.tensor = tensor  # torch.Tensor
        self.submit = submit  # hands a job to the late worker
        self.left = settings.save_inputs_max
        self.pid = os.getpid()
        self._open: dict[int, dict[str, Any]] = {}  # id(frame) -> the launch's entry, until it returns

    def before(self, frame: FrameType, launch: int, kernel: int, t: int, args: tuple) -> None:
        """At the call's start: copy each tensor argument, or count the launch when it does not fit."""
        entry: dict[str, Any] = {"pid": self.pid, "t": t, "launch": launch + 1, "kernel": kernel}
        tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, self.tensor)]
        need = 2 * sum(a.numel() * a.element_size() for _, a in tensors)  # before and after
        if need > self.left:
            entry["skipped"] = (
                f"over the byte cap ({need} bytes; {self.left} of {self.settings.save_inputs_max} left)"
            )
            self.submit(lambda: self._write(entry, []))
            return
        self.left -= need
        entry["held"] = need
        entry["tensors"] = tensors
        entry["copies"] = [(f"arg{i}-before", _host(a)) for i, a in tensors]
        self._open[id(frame)] = entry

    def after(self, frame: FrameType, value: Any) -> None:
        """As the call returns: copy the same tensors again and those it returned; hand them to the writer."""
        entry = self._open.pop(id(frame), None)
        if entry is None:
            return
        tensors = entry.pop("tensors")
        copies = entry.pop("copies")
        copies += [(f"arg{i}-after", _host(a)) for i, a in tensors]
        returned = value if isinstance(value, (list, tuple)) else [value]
        returned = [a for a in returned if isinstance(a, self.tensor)]
        need = sum(a.numel() * a.element_size() for a in returned)
        if need > self.left:
            self.left += entry.pop("held")
            entry["skipped"] = f"over the byte cap with its outputs ({need} bytes more; {self.left} left)"
            copies = []
        else:
            self.left -= need
            copies += [(f"ret{j}-after", _host(a)) for j, a in enumerate(returned)]
        entry.pop("held", None)
        self.submit(lambda: self._write(entry, copies))

    # -- on the late worker -----------------------------------------------------------------------
    def _write(self, entry: dict[str, Any], copies: list[tuple[str, Any]]) -> None:
        import numpy

        root = (
            self.settings.claim_script_dir() / RUN_RECORDS / log_format.inputs_name(self.settings.invocation)
        )
        root.mkdir(parents=True, exist_ok=True)
        stem = f"{entry['pid']}-{entry['launch']}"
        args: dict[str, dict[str, Any]] = {}
        for label, (dtype, array) in copies:
            which, when = label.split("-")
            name = f"{stem}-{label}.npy"
            path = root / name
            with open(path, "xb") as fp:
                numpy.save(fp, array, allow_pickle=False)
            item = args.setdefault(which, {"index": int(which[3:])})
            item.update(shape=list(array.shape), dtype=dtype, stored=str(array.dtype))
            item[when] = name
            item[f"{when}_sha256"] = _sha256(path)
        if copies:
            entry["args"] = [v for k, v in args.items() if k.startswith("arg")]
            entry["returned"] = [v for k, v in args.items() if k.startswith("ret")]
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(
            root / log_format.INPUTS_INDEX, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644
        )
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def _host(a: Any) -> tuple[str, Any]:
    """(torch's dtype name, a NumPy copy of the tensor on the host); a dtype NumPy lacks as its unsigned bits."""
    import torch

    dtype = str(a.dtype).removeprefix("torch.")
    t = a.detach().to("cpu", copy=True)
    try:
        return dtype, t.numpy()
    except TypeError:
        bits = getattr(torch, _UINT[t.element_size()])
        return dtype, t.view(bits).numpy()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fp:
        for block in iter(lambda: fp.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
