"""The facts tltrace reads off a compile: each one named, typed, documented, with the text it comes from.

One registry (`FACTS`) that docs/facts.md, `show --facts`, the index's columns and
`diff-runs` all read; `tests/test_facts.py` holds the page and this table together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# Which recorded text a fact is read from (docs/facts.md, "Sources").
DEVICE = "device"  # the generated device source: the codegen record of role "device" (its after text)
CODEGEN_INPUT = "codegen_input"  # the IR handed to device codegen: that record's before text
FRONTEND = "frontend"  # the compile's first input IR: the first record's before text
SOURCE_MAP = "source_map"  # sourcemap.jsonl's map of the device source
PTXAS = "ptxas"  # `nvcc -cubin -Xptxas -v` over the device source (tltrace run --ptxas)
REMARKS = "remarks"  # what the passes wrote to stderr: the manifest's `remarks` (tltrace run --remarks)
SOURCES = (DEVICE, CODEGEN_INPUT, FRONTEND, SOURCE_MAP, PTXAS, REMARKS)

Value = int | bool | str | None


@dataclass(frozen=True)
class Fact:
    """One fact's definition: its name, JSON type, unit, the text it is read from, and what it means."""

    name: str
    type: str  # "int", "bool" or "str"; every fact may also be null (not known for this compile)
    unit: str  # "count", "bytes", "bits", "threads", "blocks", "registers", "percent", "" (none)
    source: str  # one of SOURCES
    doc: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def _f(name: str, type_: str, unit: str, source: str, doc: str) -> Fact:
    return Fact(name, type_, unit, source, doc)


FACTS: tuple[Fact, ...] = (
    # -- the copy and MMA paths (device source) ---------------------------------------------
    _f("kernels", "int", "count", DEVICE, "`__global__` functions defined in the device source."),
    _f(
        "tma_load",
        "int",
        "count",
        DEVICE,
        "TMA load call sites (`tl::tma_load*`, im2col and multicast included).",
    ),
    _f("tma_store", "int", "count", DEVICE, "TMA store call sites (`tl::tma_store*`)."),
    _f(
        "wgmma",
        "int",
        "count",
        DEVICE,
        "WGMMA call sites (`tl::wgmma_ss`, `wgmma_rs`, ...); descriptors not counted.",
    ),
    _f("mma", "int", "count", DEVICE, "`mma_sync` call sites (Ampere-style tensor-core MMA)."),
    _f(
        "cp_async",
        "int",
        "count",
        DEVICE,
        "cp.async copy call sites (`tl::cp_async_gs*`); commits and waits not counted.",
    ),
    _f("ldmatrix", "int", "count", DEVICE, "ldmatrix call sites (`tl::ptx_ldmatrix_*`)."),
    _f(
        "mbarrier",
        "int",
        "count",
        DEVICE,
        "mbarrier operations: a method called on a barrier (`mbarrier[i].wait(...)`) or a `tl::mbarrier_*` call.",
    ),
    # -- barriers ---------------------------------------------------------------------------
    _f("syncthreads", "int", "count", DEVICE, "`__syncthreads()` call sites."),
    _f(
        "fences",
        "int",
        "count",
        DEVICE,
        "memory fences: `__threadfence*` and `tl::fence_*` call sites (register fences such as `warpgroup_fence_operand` are not memory fences).",
    ),
    # -- launch and memory ------------------------------------------------------------------
    _f(
        "launch_bounds",
        "int",
        "threads",
        DEVICE,
        "the largest maxThreadsPerBlock of a `__launch_bounds__(N, M)`; null without one.",
    ),
    _f(
        "launch_min_blocks",
        "int",
        "blocks",
        DEVICE,
        "minBlocksPerMultiprocessor of that `__launch_bounds__`; null without one.",
    ),
    _f(
        "vector_load_bits",
        "int",
        "bits",
        DEVICE,
        "the widest vector load: a dereference `*(T*)(...)` of a CUDA vector type on a statement's right side.",
    ),
    _f(
        "vector_store_bits",
        "int",
        "bits",
        DEVICE,
        "the widest vector store: `*(T*)(...) = ...` of a CUDA vector type.",
    ),
    _f(
        "arch",
        "str",
        "",
        CODEGEN_INPUT,
        "the target's `arch` (`sm_90a`); null for a target without one (the CPU).",
    ),
    _f(
        "grid",
        "str",
        "",
        CODEGEN_INPUT,
        "the first kernel's grid, `X x Y x Z` from its `blockIdx` launch threads.",
    ),
    _f("blocks", "int", "blocks", CODEGEN_INPUT, "thread blocks in that grid (X*Y*Z)."),
    _f(
        "threads",
        "int",
        "threads",
        CODEGEN_INPUT,
        "threads per block of the first kernel (the product of its `threadIdx` extents).",
    ),
    _f(
        "smem_dynamic",
        "int",
        "bytes",
        CODEGEN_INPUT,
        "dynamic shared memory: the largest `dyn_shared_memory_buf` of a kernel.",
    ),
    _f(
        "smem_static",
        "int",
        "bytes",
        CODEGEN_INPUT,
        "static shared memory: the bytes of the `alloc_buffer`s of a `shared` scope other than `shared.dyn` (barriers included).",
    ),
    # -- pipelining -------------------------------------------------------------------------
    _f(
        "warp_specialized",
        "bool",
        "",
        CODEGEN_INPUT,
        "a `kWarpSpecializationScope` is in the IR (producer and consumer warps).",
    ),
    _f(
        "set_max_nreg",
        "int",
        "count",
        CODEGEN_INPUT,
        "`T.set_max_nreg` calls (register reallocation between warp groups).",
    ),
    _f(
        "max_nreg",
        "int",
        "registers",
        CODEGEN_INPUT,
        "the largest register count a `T.set_max_nreg` asks for; null without one.",
    ),
    _f(
        "num_stages",
        "int",
        "count",
        FRONTEND,
        "the largest `num_stages` of a pipelined loop in the frontend IR; null without one.",
    ),
    # -- the source map ----------------------------------------------------------------------
    _f(
        "sourcemap_coverage",
        "int",
        "percent",
        SOURCE_MAP,
        "device-source lines with a Python line behind them, in percent; null without a recorded map.",
    ),
    # -- machine facts (ptxas) -----------------------------------------------------------------
    _f(
        "registers", "int", "registers", PTXAS, "the most registers a kernel uses (ptxas `Used N registers`)."
    ),
    _f(
        "spill_store_bytes",
        "int",
        "bytes",
        PTXAS,
        "spill stores over every kernel (ptxas `N bytes spill stores`).",
    ),
    _f(
        "spill_load_bytes",
        "int",
        "bytes",
        PTXAS,
        "spill loads over every kernel (ptxas `N bytes spill loads`).",
    ),
    _f("spill_bytes", "int", "bytes", PTXAS, "spill_store_bytes + spill_load_bytes."),
    _f(
        "stack_frame",
        "int",
        "bytes",
        PTXAS,
        "the largest stack frame of a kernel (ptxas `N bytes stack frame`).",
    ),
    _f(
        "ptxas_smem",
        "int",
        "bytes",
        PTXAS,
        "the most static shared memory ptxas gives a kernel (`N bytes smem`).",
    ),
    # -- remarks (what the passes said on stderr; run --remarks) ---------------------------------
    _f(
        "remarks",
        "int",
        "count",
        REMARKS,
        "lines the top-level passes wrote to stderr; null without --remarks.",
    ),
    _f(
        "ws_skipped",
        "str",
        "",
        REMARKS,
        "why warp specialization was skipped: the first `AutoWarpSpecialization skipped: WHY` "
        "(`[WS] skipped: WHY` in later TileLang) a pass printed; null when none did or without --remarks.",
    ),
    _f(
        "layout_fallbacks",
        "int",
        "count",
        REMARKS,
        "remark lines that say a layout fell back (`layout ... falling back`); null without --remarks.",
    ),
)

BY_NAME: dict[str, Fact] = {f.name: f for f in FACTS}
NAMES: tuple[str, ...] = tuple(f.name for f in FACTS)
MACHINE: tuple[str, ...] = tuple(f.name for f in FACTS if f.source == PTXAS)
