"""Nsight Compute for `tltrace run --ncu`: where it is, its command line, what went wrong, its report read.

- `locate()`: the `ncu` on PATH (else under /usr/local/cuda/bin, /opt/nvidia/nsight-compute/*),
  and ncu's own Python module (`ncu_report`) in `<install>/extras/python`, found from the
  real path of `ncu` and the known install directories.
- `prefix()`: the tool's part of the command line runtime/outer.py runs the script under:
  `ncu --section S --import-source yes --kernel-name-base mangled -k regex:K --launch-count N -f -o REPORT --log-file LOG`.
  ncu's own messages go to LOG, so that the script's output stays the script's.
- `problem()`: the one line said when ncu measured nothing: no permission for the counters
  (ERR_NVGPUCTRPERM), or no kernel matched.
- `read()`: the report as the dumper's JSON (runtime/_ncu_dump.py, run in a child Python
  with ncu's module on its path), else, without the module, ncu's source page as CSV
  (runtime/ncu_csv.py).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..proc import group as procgroup
from ..proc.pychild import SAFE_PATH
from . import ncu_csv

DEFAULT_SECTIONS = "SourceCounters"
DEFAULT_LAUNCHES = 3
READ_TIMEOUT_S = 300.0
INSTALL_GLOBS = (
    "/opt/nvidia/nsight-compute/*",
    "/usr/local/cuda/nsight-compute*",
    "/usr/local/NVIDIA-Nsight-Compute*",
)
# TileLang names a kernel's device function after its PrimFunc: main -> main_kernel (main_kernel_1, ...).
KERNEL_REGEX = r"_kernel(_[0-9]+)?$"
PERMISSION = "ERR_NVGPUCTRPERM"


class Unavailable(Exception):
    """ncu cannot be used here: one line, and the script runs untouched."""


@dataclass(frozen=True)
class Ncu:
    exe: str  # the ncu program
    python_dir: str | None  # <install>/extras/python, where ncu_report.py is; None: read the CSV


def _python_dir(exe: str) -> str | None:
    real = Path(os.path.realpath(exe))
    homes = [real.parent, real.parent.parent]
    for pattern in INSTALL_GLOBS:
        homes += [Path(p) for p in sorted(glob.glob(pattern), reverse=True)]
    for home in homes:
        d = home / "extras" / "python"
        if (d / "ncu_report.py").is_file():
            return str(d)
    return None


def locate(path_env: str | None = None) -> Ncu:
    """Return ncu and its Python module's directory; raises Unavailable when there is no ncu."""
    exe = shutil.which("ncu", path=path_env)
    if exe is None:
        for pattern in ("/usr/local/cuda/bin/ncu", *(g + "/ncu" for g in INSTALL_GLOBS)):
            found = sorted(glob.glob(pattern), reverse=True)
            if found and os.access(found[0], os.X_OK):
                exe = found[0]
                break
    if exe is None:
        raise Unavailable(
            "no ncu (Nsight Compute) on PATH or in /usr/local/cuda/bin, /opt/nvidia/nsight-compute"
        )
    return Ncu(exe, _python_dir(exe))


def kernel_filter(kernels: str | None) -> str:
    """Return ncu's -k value: TileLang's kernels only (those of `kernels`, run --kernels's regex, if given)."""
    if kernels:
        return f"regex:(?:{kernels}).*{KERNEL_REGEX}"
    return "regex:" + KERNEL_REGEX


def prefix(ncu: Ncu, report: Path, log: Path, sections: str, launches: int, kernels: str | None) -> list[str]:
    """Return ncu's part of the command line (the traced command follows it)."""
    argv = [ncu.exe]
    for s in (x.strip() for x in sections.split(",")):
        if s:
            argv += ["--section", s]
    # -k matches the mangled name: TileLang's kernels are extern "C" (mangled = plain `<PrimFunc>_kernel`),
    # while a C++ kernel's mangled name ends with its parameters' codes (torch's
    # `distribution_elementwise_grid_stride_kernel` is `_ZN2at6native...T2_`), so `_kernel$` leaves them out.
    argv += ["--import-source", "yes", "--kernel-name-base", "mangled", "-k", kernel_filter(kernels)]
    if launches > 0:
        argv += ["--launch-count", str(launches)]
    return [*argv, "-f", "-o", str(report.with_suffix("")), "--log-file", str(log)]


def problem(log_text: str, report: Path) -> str | None:
    """Return the one line for a run where ncu measured nothing, else None."""
    if PERMISSION in log_text:
        return (
            "--ncu: no permission for the GPU's performance counters (ERR_NVGPUCTRPERM): run as root "
            "or allow them (NVreg_RestrictProfilingToAdminUsers=0); the run went on unprofiled"
        )
    if not report.exists():
        if "No kernels were profiled" in log_text:
            return "--ncu: no TileLang kernel was launched (ncu profiled nothing)"
        last = [ln for ln in log_text.splitlines() if "==ERROR==" in ln][-1:]
        return "--ncu: ncu wrote no report" + (f" ({last[0].strip()})" if last else "")
    return None


def read(ncu: Ncu, report: Path, out: Path) -> dict[str, Any]:
    """Return the report as the dumper's JSON (also written to `out`); raises RuntimeError when unreadable."""
    if ncu.python_dir is not None:
        dumper = Path(__file__).with_name("_ncu_dump.py")
        env = dict(os.environ, PYTHONPATH=ncu.python_dir)
        argv = [sys.executable, *SAFE_PATH, str(dumper), str(report), str(out)]
        try:
            p = procgroup.run(argv, capture_output=True, text=True, timeout=READ_TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"ncu's Python module took over {READ_TIMEOUT_S:g} s") from None
        if p.returncode == 0:
            return json.loads(out.read_text())
        err = (p.stderr or "").strip().splitlines()[-1:] or [f"exit {p.returncode}"]
        raise RuntimeError(f"ncu's Python module could not read {report.name}: {err[0]}")
    argv = [ncu.exe, "--import", str(report), "--page", "source", "--print-source", "cuda,sass", "--csv"]
    try:
        p = procgroup.run(argv, capture_output=True, text=True, timeout=READ_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"ncu --import took over {READ_TIMEOUT_S:g} s") from None
    if p.returncode != 0:
        raise RuntimeError(f"ncu --import {report.name} exited {p.returncode}")
    data = ncu_csv.parse(p.stdout)
    out.write_text(json.dumps(data))
    return data
