"""The one nvcc build of a device source, as TileLang's CUDA backend builds it; shared by facts/ and stages/.

The device source is compiled to a cubin the way TileLang's CUDA backend compiles it
(tilelang/cuda/backend.py `tilelang_callback_cuda_compile` and contrib/nvcc.py
`compile_cuda`: `nvcc -ccbin=<c++> --cubin -O3 -lineinfo -arch=<the target's arch>
-std=c++20 -I<tl_templates> -I<cutlass> <tl.device_compile_flags> [--use_fast_math]
[--ptxas-options=--register-usage-level=N]`, the last three from the compile's pass
configs), with `-Xptxas -v -w` added, in a child process under a time limit. Slow
(seconds: the C++ front end over TileLang's headers), so it runs only when asked
(`tltrace run --ptxas`, `--ptx`, `--sass`) and never on the compiling thread. One build
serves both: ptxas's report is --ptxas's machine facts (facts/ptxas.py), and the PTX and
cubin it keeps are the PTX and SASS stages (stages/). Without nvcc it raises `Unavailable`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..proc import group as procgroup
from ..sourcemap.lines import blank_directives

TIMEOUT_S = 300.0  # one nvcc build; TileLang's own limit is of the same order
_ARCH = re.compile(r"^sm_\d+[a-z]?$")


_said: set[str] = set()  # what was said once in this process (no toolchain, a failure)
_said_lock = threading.Lock()


def say_once(key: str, warn: Callable[[str], None], message: str) -> None:
    """Say `message` through `warn` once per process for `key` (a missing toolchain, a failed build)."""
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    warn(message)


class Unavailable(Exception):
    """No toolchain here (no nvcc), or a target without an sm_ arch: said once, never an error."""


def nvcc() -> str | None:
    """Return the nvcc TileLang would use (its own lookup when importable), else the one on PATH."""
    try:
        from tilelang.contrib.nvcc import get_nvcc_compiler  # type: ignore[import-not-found]

        found = get_nvcc_compiler()
        if found and shutil.which(found):
            return str(shutil.which(found))
    except Exception:
        pass
    return shutil.which("nvcc")


def _includes() -> list[str]:
    try:
        from tilelang import env  # type: ignore[import-not-found]

        return [f"-I{p}" for p in (env.TILELANG_TEMPLATE_PATH, env.CUTLASS_INCLUDE_DIR) if p]
    except Exception:
        return []


def _host_compiler() -> list[str]:
    """Return `-ccbin=<c++>` as TileLang's compile_cuda passes it (none when TileLang cannot say)."""
    try:
        from tilelang.contrib.cc import get_cplus_compiler  # type: ignore[import-not-found]

        found = get_cplus_compiler()
        return [f"-ccbin={found}"] if found else []
    except Exception:
        return []


# The pass configs TileLang's CUDA build reads (tilelang/transform/pass_config.py PassConfigKey).
FAST_MATH = "tl.enable_fast_math"
REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
BUILD_CONFIGS = (FAST_MATH, REGISTER_USAGE_LEVEL, DEVICE_COMPILE_FLAGS)


def build_options(configs: dict[str, Any] | None) -> list[str]:
    """Return the nvcc options the compile's pass configs add, in the order TileLang adds them.

    tilelang/cuda/backend.py: the extra device flags (each shell-split) after the include
    paths, then `--use_fast_math`, then `--ptxas-options=--register-usage-level=N`.
    """
    import shlex

    cfg = configs or {}
    out: list[str] = []
    extra = cfg.get(DEVICE_COMPILE_FLAGS)
    if extra:
        for flag in [extra] if isinstance(extra, str) else extra:
            out.extend(shlex.split(flag) if isinstance(flag, str) else [str(flag)])
    if cfg.get(FAST_MATH):
        out.append("--use_fast_math")
    level = cfg.get(REGISTER_USAGE_LEVEL)
    if level is not None:
        out.append(f"--ptxas-options=--register-usage-level={int(level)}")
    return out


def command(
    compiler: str, arch: str, source: str, cubin: str, configs: dict[str, Any] | None = None
) -> list[str]:
    """Return the nvcc command line that builds `source` into `cubin` as TileLang would, ptxas's report on."""
    return [
        compiler,
        *_host_compiler(),
        "--cubin",
        "-O3",
        "-lineinfo",
        f"-arch={arch}",
        "-std=c++20",
        *_includes(),
        *build_options(configs),
        "-Xptxas",
        "-v",
        "-w",
        "-o",
        cubin,
        source,
    ]


def configs_now() -> dict[str, Any]:
    """Return the build's pass configs of the PassContext in force (JSON values; {} outside TileLang).

    Called on the compiling thread at the device codegen call (a few dictionary reads), so
    the build later on the worker uses the configs that compile ran under.
    """
    try:
        from tvm.ir.transform import PassContext  # type: ignore[import-not-found]

        config = PassContext.current().config
    except Exception:
        return {}
    out: dict[str, Any] = {}
    for key in BUILD_CONFIGS:
        if key not in config:
            continue
        v = config[key]
        if key == DEVICE_COMPILE_FLAGS:
            out[key] = [str(v)] if isinstance(v, str) else [str(x) for x in v]
        elif key == FAST_MATH:
            out[key] = bool(v)
        else:
            out[key] = int(v)
    return out


@dataclass(frozen=True)
class Build:
    """One nvcc build of a device source: ptxas's report, the PTX nvcc kept on the way, the cubin."""

    tool: str
    arch: str
    seconds: float
    command: list[str]  # as a person reruns it (kernel.cu, kernel.cubin: relative names)
    log: str
    ptx: str | None  # nvcc --keep's .ptx, its temporary paths made relative (kernel.cu)
    cubin: bytes | None


_MEMO_SIZE = 4
_memo: OrderedDict[tuple[str, str, str], Build | BaseException] = OrderedDict()
_memo_lock = threading.Lock()


def build(
    source: str, arch: str | None, timeout: float = TIMEOUT_S, configs: dict[str, Any] | None = None
) -> Build:
    """Build `source` for `arch` with ptxas's report, keeping the PTX; one nvcc run per (source, arch).

    The last few builds are kept: --ptxas's machine facts and the PTX/SASS stages (run --ptx,
    --sass) of one compile share one nvcc run. Raises Unavailable without nvcc or an sm_ arch;
    RuntimeError when nvcc fails (its last lines in the message).
    """
    if not arch or not _ARCH.match(arch):
        raise Unavailable(f"no CUDA arch to build for ({arch or 'none'}): machine facts are for CUDA targets")
    # TileLang's own `#line` lines (`tl.emit_line_directives`, which its compile-only tool turns
    # on) would name made-up Python lines in the PTX: each kernel.cu line stays the source's own.
    source = blank_directives(source)
    key = (
        hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
        arch,
        json.dumps(configs or {}, sort_keys=True),
    )
    with _memo_lock:
        hit = _memo.get(key)
        if hit is not None:
            _memo.move_to_end(key)
    if hit is None:
        try:
            hit = _build(source, arch, timeout, configs)
        except (Unavailable, RuntimeError) as exc:
            hit = exc
        with _memo_lock:
            _memo[key] = hit
            while len(_memo) > _MEMO_SIZE:
                _memo.popitem(last=False)
    if isinstance(hit, BaseException):
        raise hit
    return hit


def _build(source: str, arch: str, timeout: float, configs: dict[str, Any] | None) -> Build:
    compiler = nvcc()
    if compiler is None:
        raise Unavailable("no nvcc on PATH: machine facts (registers, spills) need the CUDA toolkit")
    with tempfile.TemporaryDirectory(prefix="tltrace-ptxas-") as tmp:
        src, cubin = os.path.join(tmp, "kernel.cu"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        cmd = command(compiler, arch, src, cubin, configs)
        keep = os.path.join(tmp, "keep")
        os.mkdir(keep)
        t0 = time.perf_counter()
        try:
            # env: a copy taken now. This runs on a worker thread; with env=None the child would
            # exec with the C `environ` as another thread left it mid-update (the lifecycle puts and
            # takes PYTHONPATH around the job), which failed as EFAULT ("Bad address") in CI.
            env = dict(os.environ)
            run = [*cmd[:-3], "--keep", "--keep-dir", keep, *cmd[-3:]]
            p = procgroup.run(run, capture_output=True, text=True, timeout=timeout, cwd=tmp, env=env)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"nvcc took over {timeout:g} s") from None
        seconds = round(time.perf_counter() - t0, 3)
        log = (p.stdout or "") + (p.stderr or "")
        if p.returncode != 0:
            tail = " | ".join(ln.strip() for ln in log.strip().splitlines()[-3:])
            raise RuntimeError(f"nvcc exited {p.returncode}: {tail}")
        ptx = _read(os.path.join(keep, "kernel.ptx"))
        if ptx is not None:
            ptx = ptx.replace(src, "kernel.cu")  # the temporary path would differ on every build
        try:
            with open(cubin, "rb") as fb:
                binary: bytes | None = fb.read()
        except OSError:
            binary = None
    return Build(
        tool=os.path.basename(compiler),
        arch=arch,
        seconds=seconds,
        command=[os.path.basename(cmd[0]), *cmd[1:-3], "-o", "kernel.cubin", "kernel.cu"],
        log=log,
        ptx=ptx,
        cubin=binary,
    )


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
