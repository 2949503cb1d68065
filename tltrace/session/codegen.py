"""Codegen events: which role a target.build.* call plays, and what its module holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DEVICE = "device"
HOST = "host"

_HOST_FFIS = {"target.build.tilelang_c_host"}
_SOURCE_COMPILING_SUFFIX = "_without_compile"


def classify_role(event: Any) -> str | None:
    """Return "device", "host" or None for a CodegenEvent.

    TileLang versions that label events carry a `role`; 0.1.15 does not, so the
    FFI name decides: *_host and target.build.llvm (unless the target itself is
    llvm) are host; every target.build.tilelang_* or webgpu call is device.
    """
    role = getattr(event, "role", None)
    if role is not None:
        role = str(role).lower()
        return role if role in (DEVICE, HOST) else None
    name = str(getattr(event, "name", "") or "")
    if name in _HOST_FFIS or name.endswith("_host"):
        return HOST
    if name == "target.build.llvm":
        kind = _target_kind(getattr(event, "target", None))
        return DEVICE if kind == "llvm" else HOST
    if name.startswith("target.build.tilelang_") or name == "target.build.webgpu":
        return DEVICE
    return None


def _target_kind(target: Any) -> str | None:
    try:
        return str(target.kind.name)
    except Exception:
        return None


def record_name(role: str | None) -> str:
    return f"codegen_{role}" if role else "codegen"


def compiles_source(ffi_name: str) -> bool:
    """Return True when the module this FFI returns is source compiled later (edits take effect).

    Checked against TileLang 0.1.15's backends: every `*_without_compile` FFI and
    `target.build.tilelang_c` (host: `tilelang_c_host`) return C-family source that
    the adapter compiles afterwards. Not included, on purpose:
    - `target.build.tilelang_ascend` (like `tilelang_cuda`, `tilelang_hip`) compiles
      inside the FFI through `tilelang_callback_ascend_compile` and returns a binary;
      its `_without_compile` twin is covered by the suffix.
    - `target.build.webgpu` returns TVM's WebGPU module (WGSL run as is); 0.1.15
      registers no Python constructor for that module type, and a C source module in
      its place would not run, so an edit cannot be compiled back.
    - `target.build.tilelang_cpp` is not registered in 0.1.15 at all.
    """
    return ffi_name.endswith(_SOURCE_COMPILING_SUFFIX) or ffi_name in (
        "target.build.tilelang_c",
        "target.build.tilelang_c_host",
    )


def module_source(module: Any, on_error: Callable[[str], None] | None = None) -> str:
    """Return the source text a codegen module carries ('' when it has none).

    When reading it raises, `on_error` hears one line: an empty source then means
    "could not be read", not "there is none".
    """
    for attr in ("inspect_source", "get_source"):
        fn = getattr(module, attr, None)
        if fn is None:
            continue
        try:
            text = fn()
        except Exception as exc:
            if on_error is not None:
                on_error(
                    f"could not read the generated source ({attr}: {type(exc).__name__}: {exc}); "
                    "no working file for this codegen call"
                )
            continue
        if isinstance(text, str) and text:  # a stand-in's mock attribute is no source
            return text
    return ""


# Source formats that read a `#line` directive (C, C++, CUDA, HIP).
_LINE_FORMATS = {"c", "cc", "cpp", "cxx", "cu", "cuda", "hip"}


def line_directive(path: Any) -> str:
    """Return `#line 1 "PATH"`: compile errors in the text after it name PATH and its own lines."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "?")
    return f'#line 1 "{text}"\n'


def source_module(original: Any, source: str, origin: Any = None) -> Any:
    """Return a real TVM source module carrying `source`, in the original's format.

    `origin`: the working file `source` was read from; a C-family source then starts
    with a `#line` directive, so a compiler error names that file's own line, not a
    temporary file's.
    """
    import tvm.runtime._ffi_api as ffi_api  # type: ignore[import-not-found]

    try:
        fmt = str(original.format)
    except Exception:
        fmt = "c"
    if origin is not None and fmt.lower() in _LINE_FORMATS:
        source = line_directive(origin) + source
    return ffi_api.CSourceModuleCreate(source, fmt, [], None)
