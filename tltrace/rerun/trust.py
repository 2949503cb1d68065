"""What a rerun takes from data it did not make: a bundle or a run directory from elsewhere.

A bundle's `context.json` and `bundle.json` are the sender's to choose. TileLang passes
some of that to a command line: `tl.device_compile_flags` reaches nvcc (and nvcc starts
the host compiler through `sh`), the target's `arch` becomes `-arch=...`, a compile with
`device_compile` runs nvcc or NVRTC. So by default a rerun takes only what is data:

- the pass configs of the allow-list below, TileLang's boolean and numeric ones (names
  and types from TileLang 0.1.15's `tilelang/transform/pass_config.py` PassConfigKey),
  with a value of that type; everything else is dropped and named (`not_applied`);
- a target given as a JSON object whose kind is one of TARGET_KINDS and whose every
  key is known and of its type, the strings of a plain form (letters, digits, `_.+-:`);
  anything else refuses the compile (RecordsError, exit 3);
- lowering and source-only codegen (TileLang's `*_without_compile` builds): never
  nvcc, gcc, cython or NVRTC, never a library loaded.

`plan(context, flags, build=True)` applies the recorded config as it is and compiles
device code as the recording did; the target is checked either way. Pure: data in, a
Plan out; nothing here imports TileLang or prints.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import RecordsError

# TileLang 0.1.15's PassConfigKey: the configs whose value is a bool or a number (TVM
# registers them as IntImm / FloatImm). tests/test_rerun_trust.py checks this table
# against the installed TileLang's PassConfigKey and registered types.
BOOL, INT, FLOAT, SIMPLIFY = "bool", "int", "float", "simplify"
PASS_CONFIGS: dict[str, str] = {
    "tl.Simplify": SIMPLIFY,
    "tl.disable_buffer_init_check": BOOL,
    "tl.disable_data_race_check": BOOL,
    "tl.disable_prelower_semantic_check": BOOL,
    "tl.disable_warp_specialized": BOOL,
    "tl.enable_auto_schedule": BOOL,
    "tl.enable_fast_math": BOOL,
    "tl.ptxas_register_usage_level": INT,
    "tl.emit_line_directives": BOOL,
    "tl.config_index_bitwidth": INT,
    "tl.enable_reducer_plan_verbose": BOOL,
    "tl.reducer_force_baseline": BOOL,
    "tl.disable_tma_lower": BOOL,
    "tl.disable_safe_memory_legalize": BOOL,
    "tl.disable_vectorize_256": BOOL,
    "tl.enable_fp32x2_reduction": BOOL,
    "tl.enable_async_copy": BOOL,
    "tl.enable_lower_ldgstg": BOOL,
    "tl.enable_lower_ldgstg_predicated": BOOL,
    "tl.enable_vectorize_planner_verbose": BOOL,
    "tl.disable_wgmma": BOOL,
    "tl.debug_merge_shared_memory_allocations": BOOL,
    "tl.enable_aggressive_shared_memory_merge": BOOL,
    "tl.disable_shared_memory_reuse": BOOL,
    "tl.disable_shuffle_elect": BOOL,
    "tl.disable_loop_unswitching": BOOL,
    "tl.loop_unswitching_allow_non_trivial_else": BOOL,
    "tl.if_stmt_binding_inline_replayable_binds": BOOL,
    "tl.disable_thread_storage_sync": BOOL,
    "tl.force_let_inline": BOOL,
    "tl.ast_print_enable": BOOL,
    "tl.storage_rewrite_detect_inplace": BOOL,
    "tir.enable_equiv_terms_in_cse_tir": BOOL,
    "tirx.disable_cse_tir": BOOL,
    "tirx.Simplify": SIMPLIFY,
    "tirx.disable_storage_rewrite": BOOL,
    "tirx.disable_vectorize": BOOL,
    "tirx.use_async_copy": BOOL,
    "tirx.enable_debug": BOOL,
    "tirx.merge_static_smem": BOOL,
    "tirx.noalias": BOOL,
    "tl.disable_out_of_bound_warning": BOOL,
    "tl.pass_profile": BOOL,
    "tl.pass_profile_threshold_ms": FLOAT,
}
# Boolean configs that are not data only: they make the compile write files (IR dumps,
# layout plots) under a directory that another config (a string) or the cwd names.
WRITES_FILES = frozenset({"tl.enable_dump_ir", "tl.layout_visualization_enable"})
# The fields of TileLang's and TVM's SimplifyConfig (tl.Simplify, tirx.Simplify): all bool.
SIMPLIFY_FIELDS = frozenset(
    {
        "transitively_prove_inequalities",
        "convert_boolean_to_and_of_ors",
        "apply_constraints_to_boolean_branches",
        "propagate_knowns_to_prove_conditional",
        "propagate_knowns_to_simplify_expressions",
        "enable_simplify_let_inline",
    }
)
_SIMPLIFY_TYPES = {
    "tl.Simplify": "tl.transform.SimplifyConfig",
    "tirx.Simplify": "tirx.transform.SimplifyConfig",
}

# The target kinds TileLang compiles for, and the keys a target may have: (type, pattern).
TARGET_KINDS = frozenset({"c", "llvm", "cuda", "hip", "rocm", "metal", "webgpu"})
HOST_KINDS = frozenset({"c", "llvm"})
_TOKEN = re.compile(r"[A-Za-z0-9_.+:-]{0,64}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_TAG = re.compile(r"[A-Za-z0-9_./-]{0,64}")
_TARGET_KEYS: dict[str, tuple[str, re.Pattern[str] | None]] = {
    "kind": ("str", _NAME),
    "tag": ("str", _TAG),
    "keys": ("list", _NAME),
    "device": ("str", _TOKEN),
    "model": ("str", _TOKEN),
    "mcpu": ("str", _TOKEN),
    "march": ("str", _TOKEN),
    "mtriple": ("str", _TOKEN),
    "mabi": ("str", _TOKEN),
    "mfloat-abi": ("str", _TOKEN),
    "mattr": ("list", re.compile(r"[+-]?[A-Za-z0-9_.-]{1,64}")),
    "arch": ("str", re.compile(r"sm_[0-9]{2,4}[a-z]?")),
    "code": ("list", re.compile(r"sm_[0-9]{2,4}[a-z]?")),
    **{
        k: ("int", None)
        for k in (
            "from_device",
            "target_device_type",
            "max_num_threads",
            "max_threads_per_block",
            "max_shared_memory_per_block",
            "thread_warp_size",
            "registers_per_block",
            "l2_cache_size_bytes",
            "max_function_args",
            "num-cores",
            "opt-level",
            "vector-width",
            "workspace-byte-alignment",
            "constants-byte-alignment",
        )
    },
    **{
        k: ("bool", None)
        for k in (
            "fast-math",
            "fast-math-nnan",
            "fast-math-ninf",
            "fast-math-nsz",
            "fast-math-arcp",
            "fast-math-contract",
            "fast-math-reassoc",
        )
    },
}
# Known target keys that are refused: they reach a command line or a program's options.
REFUSED_TARGET_KEYS = {
    "libs": "libraries to link (a linker's command line)",
    "cl-opt": "LLVM command-line options",
    "jit": "an LLVM JIT engine",
}
_BACKEND = re.compile(r"[a-z][a-z0-9_]{0,31}")
_PASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")


@dataclass(frozen=True)
class Plan:
    """What one rerun compile gets: the context and codegen flags to apply, and what was left out."""

    context: dict[str, Any]  # opt_level, config, required/disabled passes, target, bound_target, versions
    flags: dict[str, bool]  # host_codegen, device_compile
    not_applied: tuple[str, ...] = ()  # config names dropped (not known to be data)
    device_compile_skipped: bool = False  # the recording compiled device code; this rerun does not
    build: bool = False

    def runs(self) -> str:
        """Return one line saying what a --build rerun runs: the device compile, config and target as JSON."""
        what = (
            "TileLang's device compile (nvcc, NVRTC or hipcc)"
            if self.flags["device_compile"]
            else "no compiler"
        )
        cfg = json.dumps(self.context.get("config") or {}, sort_keys=True)
        target = json.dumps(self.context.get("target") or self.context.get("bound_target"), sort_keys=True)
        return f"{what}; PassContext config {cfg}; target {target}"


def plan(context: Any, flags: Any, *, build: bool = False, where: str = "context.json") -> Plan:
    """Return what a rerun applies of a recorded `context` (context.json's data) and codegen `flags`.

    RecordsError (exit 3) when the context is not of its types or its target is refused.
    Without `build`: only the allow-listed pass configs, no device compile.
    """
    if not isinstance(context, dict):
        raise RecordsError(f"{where} is a {_kind(context)}, not an object")
    if not isinstance(flags, dict) or not all(isinstance(v, bool) for v in flags.values()):
        raise RecordsError(f"{where}: the codegen flags are not true/false values")
    out: dict[str, Any] = {}
    opt = context.get("opt_level", 2)
    if isinstance(opt, bool) or not isinstance(opt, int) or not 0 <= opt <= 4:
        raise RecordsError(f"{where}: opt_level {opt!r} is not 0 to 4")
    out["opt_level"] = opt
    for key in ("required_pass", "disabled_pass"):
        names = context.get(key) or []
        if not isinstance(names, list) or not all(
            isinstance(n, str) and _PASS_NAME.fullmatch(n) for n in names
        ):
            raise RecordsError(f"{where}: {key} is not a list of pass names")
        out[key] = list(names)
    for key in ("target", "bound_target"):
        if context.get(key) is not None:
            out[key] = check_target(context[key], f"{where}: {key}")
    if out.get("target") is None and out.get("bound_target") is None:
        raise RecordsError(f"{where} names no target")
    versions = context.get("versions")
    recorded = versions.get("tilelang") if isinstance(versions, dict) else None
    out["versions"] = {"tilelang": recorded if isinstance(recorded, str) and len(recorded) <= 64 else None}
    config = context.get("config") or {}
    if not isinstance(config, dict):
        raise RecordsError(f"{where}: config is a {_kind(config)}, not an object")
    device = bool(flags.get("device_compile"))
    if build:
        out["config"] = config
        return Plan(
            out, {"host_codegen": bool(flags.get("host_codegen")), "device_compile": device}, build=True
        )
    applied, dropped = filter_config(config)
    out["config"] = applied
    return Plan(
        out,
        {"host_codegen": bool(flags.get("host_codegen")), "device_compile": False},
        tuple(dropped),
        device_compile_skipped=device,
    )


def filter_config(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return (the configs known to be data, with their values; the names of the others, sorted)."""
    applied: dict[str, Any] = {}
    dropped: list[str] = []
    for name, value in config.items():
        kind = PASS_CONFIGS.get(name)
        ok = kind is not None and _of_kind(kind, value)
        if ok and kind == SIMPLIFY:
            value = _simplify(name, value)
            ok = value is not None
        if ok:
            applied[name] = value
        else:
            dropped.append(str(name))
    return applied, sorted(dropped)


def _of_kind(kind: str, value: Any) -> bool:
    if kind == BOOL:
        return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**31
    if kind == FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return kind == SIMPLIFY


def _simplify(name: str, value: Any) -> dict[str, bool] | None:
    """Return a SimplifyConfig as a dict of its bool fields (a dict, or its TVM JSON), or None."""
    if isinstance(value, dict) and set(value) == {"tvm_json"} and isinstance(value["tvm_json"], str):
        try:
            graph = json.loads(value["tvm_json"])
        except (ValueError, RecursionError):
            return None
        nodes = graph.get("nodes") if isinstance(graph, dict) else None
        if not isinstance(nodes, list) or len(nodes) != 1 or not isinstance(nodes[0], dict):
            return None
        if nodes[0].get("type") != _SIMPLIFY_TYPES[name]:
            return None
        value = nodes[0].get("data")
    if not isinstance(value, dict) or not set(value) <= SIMPLIFY_FIELDS:
        return None
    if not all(isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)) for v in value.values()):
        return None
    return {k: bool(v) for k, v in value.items()}


def check_target(spec: Any, where: str, *, host: bool = False) -> dict[str, Any]:
    """Return `spec` when it is a plain target tltrace accepts; RecordsError (exit 3) naming why not."""
    if not isinstance(spec, dict):
        raise RecordsError(f"{where} is a {_kind(spec)}, not a target object; refused")
    kinds = HOST_KINDS if host else TARGET_KINDS
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        raise RecordsError(f"{where}: target kind {kind!r} is not one of {', '.join(sorted(kinds))}; refused")
    for key, value in spec.items():
        if key == "host" and not host:
            check_target(value, f"{where}: host", host=True)
            continue
        if key in REFUSED_TARGET_KEYS:
            raise RecordsError(f"{where}: target key {key!r} ({REFUSED_TARGET_KEYS[key]}) is refused")
        rule = _TARGET_KEYS.get(key)
        if rule is None:
            raise RecordsError(f"{where}: unknown target key {str(key)[:64]!r}; refused")
        if not _target_value(rule, value):
            raise RecordsError(f"{where}: target {key} {_short(value)} is not a plain value; refused")
    return spec


def _target_value(rule: tuple[str, re.Pattern[str] | None], value: Any) -> bool:
    kind, pattern = rule
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40
    if kind == "str":
        return isinstance(value, str) and pattern is not None and bool(pattern.fullmatch(value))
    return (
        isinstance(value, list)
        and len(value) <= 64
        and all(isinstance(v, str) and pattern is not None and pattern.fullmatch(v) for v in value)
    )


def check_backend(backend: Any, where: str) -> str | None:
    """Return the recorded execution backend's name (None: TileLang picks); RecordsError when not a plain name."""
    if backend is None or (isinstance(backend, str) and _BACKEND.fullmatch(backend)):
        return backend
    raise RecordsError(f"{where}: backend {_short(backend)} is not a plain name; refused")


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class Notes:
    """What a rerun of several compiles left out, gathered for one line each."""

    not_applied: tuple[str, ...] = ()
    device_compile_skipped: tuple[str, ...] = field(default_factory=tuple)  # the compiles


def gather(plans: list[tuple[str, Plan]]) -> Notes:
    """Return the names of the configs not applied in any of `plans` ((label, plan) pairs), and the
    compiles whose device compile was skipped."""
    names = sorted({n for _label, p in plans for n in p.not_applied})
    return Notes(tuple(names), tuple(label for label, p in plans if p.device_compile_skipped))


def not_applied_line(names: tuple[str, ...] | list[str], limit: int = 8) -> str:
    """Return the one line naming the pass configs a rerun did not apply."""
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return (
        f"not applied: pass config {shown} (not known to be data: a value that can reach a command "
        "line or write files; --build applies the recorded config as it is)"
    )


def skipped_compile_line(labels: tuple[str, ...] | list[str], limit: int = 4) -> str:
    """Return the one line saying that compiles whose recording compiled device code get source only."""
    shown = ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more" if len(labels) > limit else "")
    return (
        f"{shown}: the recording compiled device code; rerun as source-only codegen "
        "(--build runs TileLang's device compile)"
    )
