"""SASS: the tools that disassemble a cubin, the text stored as a stage, and its instruction mix.

`nvdisasm -c -gi` prints each instruction group after its line-info chain
(`//## File "…/kernel.cu", line 29`, the inlined frames above it). The stored text keeps
the instructions and puts one `//## kernel.cu:29` line where the outermost kernel.cu line
changes: the temporary build path and the header chains go, so the same kernel gives the
same text on every build (stored once, and `diff-runs` shows what changed). Without
nvdisasm, `cuobjdump -sass` gives the instructions without lines.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile

from ..proc import group as procgroup
from .ptx import CU_NAME

TIMEOUT_S = 120.0
_CHAIN = re.compile(r'^\s*//## File "([^"]*)", line (\d+)(\s+inlined at)?')
_MARK = re.compile(r"^\s*//## " + re.escape(CU_NAME) + r":(\d+)\s*$")
_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")

# The instruction mix: what each counted class matches (the opcode, then its modifiers).
MIX = ("LDG", "STG", "LDS", "STS", "MMA", "BAR", "LDL", "STL")
_CLASS = {
    "LDG": "LDG", "STG": "STG", "LDS": "LDS", "LDSM": "LDS", "STS": "STS",
    "HMMA": "MMA", "HGMMA": "MMA", "IMMA": "MMA", "DMMA": "MMA", "QGMMA": "MMA", "IGMMA": "MMA",
    "BGMMA": "MMA", "UTCHMMA": "MMA",
    "BAR": "BAR", "LDL": "LDL", "STL": "STL",
}  # fmt: skip
SPILLS = ("LDL", "STL")


def tool(name: str) -> str | None:
    """Return `name` (nvdisasm, cuobjdump): on PATH, beside nvcc, in /usr/local/cuda/bin, else from pip's nvidia-cuda-* package."""
    found = shutil.which(name)
    if found:
        return found
    nvcc = shutil.which("nvcc")
    dirs = [os.path.dirname(os.path.realpath(nvcc))] if nvcc else []
    dirs.append("/usr/local/cuda/bin")
    try:
        import nvidia  # type: ignore[import-not-found]  # pip's nvidia-cuda-nvdisasm / -cuobjdump

        for root in getattr(nvidia, "__path__", []):
            dirs.extend(sorted(glob.glob(os.path.join(root, "*", "bin"))))
    except Exception:
        pass
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


class Unavailable(Exception):
    """No disassembler here: said once, never an error."""


def disassemble(cubin: bytes, timeout: float = TIMEOUT_S) -> tuple[str, str]:
    """Return (the stored SASS text, the tool's name); raises Unavailable, or RuntimeError when the tool fails."""
    nvdisasm, cuobjdump = tool("nvdisasm"), tool("cuobjdump")
    if nvdisasm is None and cuobjdump is None:
        raise Unavailable(
            "no nvdisasm or cuobjdump (pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump): no SASS stage"
        )
    with tempfile.TemporaryDirectory(prefix="tltrace-sass-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        if nvdisasm is not None:
            cmd, name = [nvdisasm, "-c", "-gi", path], "nvdisasm"
        else:
            cmd, name = [str(cuobjdump), "-sass", path], "cuobjdump"
        try:
            p = procgroup.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{name} took over {timeout:g} s") from None
    if p.returncode != 0:
        tail = " | ".join(ln.strip() for ln in (p.stderr or p.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{name} exited {p.returncode}: {tail}")
    return (normalise(p.stdout) if name == "nvdisasm" else p.stdout.replace(path, "kernel.cubin")), name


def normalise(raw: str, name: str = CU_NAME) -> str:
    """Return nvdisasm -gi's text with each line-info chain as one `//## kernel.cu:N` line, when N changes."""
    out: list[str] = []
    pending: int | None = None  # the outermost kernel.cu line of the chain just read
    shown: int | None = None
    for line in raw.split("\n"):
        m = _CHAIN.match(line) if "//##" in line else None
        if m:
            if not m.group(3):  # the outermost frame
                path = m.group(1)
                pending = int(m.group(2)) if (path == name or path.endswith("/" + name)) else -1
            continue
        if pending is not None and _INSN.match(line):
            if pending != shown:
                out.append(f"        //## {name}:{pending}" if pending > 0 else "        //## ?")
                shown = pending
            pending = None
        elif line.startswith(".text.") or line.startswith("//---"):
            shown = pending = None
        out.append(line)
    return "\n".join(out)


def cu_lines(sass: str) -> list[int | None]:
    """Return, per 0-based line of a stored SASS text, the kernel.cu line of its instruction (marks included)."""
    out: list[int | None] = []
    cur: int | None = None
    for line in sass.split("\n"):
        if "//##" in line:
            m = _MARK.match(line)
            cur = int(m.group(1)) if m else None
            out.append(cur)
        elif line.startswith(".text.") or line.startswith("//---"):
            cur = None
            out.append(None)
        else:
            out.append(cur if _INSN.match(line) else None)
    return out


def opcode(line: str) -> str | None:
    """Return the opcode of one SASS line's instruction ("HGMMA"), else None (a mark, a label)."""
    m = _INSN.match(line)
    return m.group(1) if m else None


def opcode_class(line: str) -> str | None:
    """Return the mix class (MIX) of one SASS line's instruction, else None."""
    m = _INSN.match(line)
    if not m:
        return None
    return _CLASS.get(m.group(1))


def instructions(sass: str) -> int:
    """Return how many instruction lines a SASS text has."""
    return sum(1 for line in sass.split("\n") if _INSN.match(line))
