"""An edit NVRTC refuses: its error at the working file's line (session/codegen_nvrtc.py's pure parts).

TileLang's nvrtc adapter hides NVRTC's log unless verbose; tltrace reads the code and options
from TileLang's error message and fetches the log itself. The GPU half (a real NVRTC compile
of a real edit) is tests/test_gpu_edit.py; here the message format, the option split, the
log parse and the mapping, and the child process's failure modes (no NVRTC, a hang) run on the CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tltrace.session import codegen as cg
from tltrace.session import codegen_nvrtc as cgn

WORKING = "/home/u/my proj/tmp/lower_trace_dir/add/codegen_device.cpp"
OPTIONS = [
    "-default-device",
    "-pch",
    "--gpu-architecture=sm_90a",
    "-I/opt/tilelang/src",
    "-I/opt/my libs/cutlass/include",
    "-I/usr/local/cuda/include",
    "-D__CUDACC_VER_MAJOR__=12",
]
EDIT = """#include <tl_templates/cuda/gemm.h>

extern "C" __global__ void __launch_bounds__(128, 1) add_kernel(float* __restrict__ A, float* __restrict__ C) {
  C[((int)threadIdx.x)] = A[((int)threadIdx.x)] oops;
}
"""


def tilelang_message(code: str, options: list[str], log: str | None = None) -> str:
    """The message tilelang.contrib.nvrtc.compile_cuda raises (0.1.10 - 0.1.15), built the same way."""
    code = "#include <tl_templates/cuda/nvrtc_std.h>\n" + code
    msg = f"{code}\nCompilation error:\n"
    if log is not None:
        msg += f"{log}\n"
    else:
        msg += "Turn on verbose to see the full compilation log."
    msg += f"Options: {' '.join(options)}\n"
    return msg


def injected(path: str = WORKING, text: str = EDIT) -> str:
    """What tltrace hands TileLang for a PATCHED C-family source (session/codegen.py)."""
    return cg.line_directive(path) + text


def nvrtc_log(path: str, line: int, what: str = 'expected a ";"') -> str:
    return (
        f"{path}({line}): error: {what}\n"
        "    C[((int)threadIdx.x)] = A[((int)threadIdx.x)] oops;\n"
        "                                                  ^\n\n"
        f'1 error detected in the compilation of "{cgn.PROGRAM_NAME}".\n'
    )


def test_message_gives_back_the_exact_code_and_options():
    code = injected()
    f = cgn.parse_failure(tilelang_message(code, OPTIONS))
    assert f is not None and f.log is None  # not verbose: the log was dropped
    assert f.code == "#include <tl_templates/cuda/nvrtc_std.h>\n" + code
    assert list(f.options) == OPTIONS  # "/opt/my libs/..." stays one option


def test_verbose_message_carries_the_log():
    log = nvrtc_log(WORKING, 4)
    f = cgn.parse_failure(tilelang_message(injected(), OPTIONS, log + "\0"))  # NVRTC's log ends in a NUL
    assert f is not None and f.log == log.strip()


def test_a_wrapped_message_still_yields_the_code_from_tilelangs_prefix():
    msg = "while compiling add: " + tilelang_message(injected(), OPTIONS)
    f = cgn.parse_failure(msg)
    assert f is not None and f.code.startswith("#include <tl_templates/cuda/nvrtc_std.h>\n#line 1 ")


@pytest.mark.parametrize(
    "msg", ["", "RuntimeError: Compilation Failed! ['g++', ...]", "x\nCompilation error:\nno options"]
)
def test_other_errors_are_not_nvrtc_failures(msg):
    assert cgn.parse_failure(msg) is None


def test_split_options_round_trips_spaces_in_paths():
    assert cgn.split_options(" ".join(OPTIONS)) == OPTIONS
    assert cgn.split_options("") == []


def test_line_directive_files_reads_tltraces_own_directive():
    odd = '/tmp/a "quoted" dir\\x/codegen_device.cpp'
    assert cgn.line_directive_files(injected(odd)) == [odd]


def test_parse_log_reads_nvrtc_diagnostics():
    log = (
        f'{WORKING}(4): error: expected a ";"\n'
        f'{WORKING}(2): warning #177-D: variable "x" was declared but never referenced\n'
        'tvm_kernels(1): catastrophic error: cannot open source file "x.h"\n'
    )
    d = cgn.parse_log(log)
    assert [(x.file, x.line, x.severity) for x in d] == [
        (WORKING, 4, "error"),
        (WORKING, 2, "warning"),
        ("tvm_kernels", 1, "catastrophic error"),
    ]


def _explain(msg: str, fetched: tuple[str | None, str] = (None, "unused")):
    calls = []

    def fetch(code, options):
        calls.append((code, options))
        return fetched

    f = cgn.parse_failure(msg)
    assert f is not None
    return cgn.explain(f, {WORKING: "add"}, fetch), calls


def test_the_error_is_said_at_the_working_files_line():
    msg = tilelang_message(injected(), OPTIONS)
    out, calls = _explain(msg, (nvrtc_log(WORKING, 4), ""))
    assert out is not None
    assert out.headline == f'{WORKING}:4: error: expected a ";"'
    assert out.path == Path(WORKING) and out.kernel == "add"
    text = out.text()
    assert text.splitlines()[0] == out.headline and f"{WORKING}(4): error" in text
    # the log is fetched with exactly what TileLang compiled
    assert calls == [("#include <tl_templates/cuda/nvrtc_std.h>\n" + injected(), tuple(OPTIONS))]


def test_a_verbose_log_is_used_as_it_is():
    out, calls = _explain(tilelang_message(injected(), OPTIONS, nvrtc_log(WORKING, 4)))
    assert calls == [] and out is not None and out.headline.startswith(f"{WORKING}:4: error")


def test_an_error_outside_the_edit_is_said_with_the_edit_named():
    log = 'tvm_kernels(1): catastrophic error: cannot open source file "tl_templates/cuda/nvrtc_std.h"\n'
    out, _ = _explain(tilelang_message(injected(), OPTIONS), (log, ""))
    assert out is not None and out.path is None
    assert out.headline == (
        f"the edit in {WORKING} did not compile under NVRTC: "
        'tvm_kernels:1: catastrophic error: cannot open source file "tl_templates/cuda/nvrtc_std.h"'
    )


def test_a_log_that_cannot_be_fetched_is_said():
    out, _ = _explain(tilelang_message(injected(), OPTIONS), (None, "No module named 'cuda'"))
    assert out is not None and out.path == Path(WORKING)
    assert "No module named 'cuda'" in out.headline and "verbose=True" in out.headline


def test_a_compile_without_an_edit_is_not_explained():
    f = cgn.parse_failure(tilelang_message(EDIT, OPTIONS))  # no #line: tltrace injected nothing
    assert f is not None
    assert cgn.explain(f, {WORKING: "add"}, lambda c, o: ("x", "")) is None
    other = cgn.parse_failure(tilelang_message(injected("/elsewhere/codegen_device.cpp"), OPTIONS))
    assert other is not None and cgn.explain(other, {WORKING: "add"}, lambda c, o: ("x", "")) is None


def test_long_logs_are_cut_with_a_count():
    log = "".join(f"{WORKING}({i}): error: e{i}\n" for i in range(1, 101))
    out, _ = _explain(tilelang_message(injected(), OPTIONS), (log, ""))
    assert out is not None
    lines = out.text(max_lines=10).splitlines()
    assert len(lines) == 12 and lines[-1].endswith("(90 more lines of NVRTC's log)")


def test_errors_come_before_the_headers_warnings():
    warn = "".join(f"/usr/include/common.h({i}): warning #1444-D: deprecated\n  x;\n  ^\n" for i in range(30))
    log = warn + f"{WORKING}(19): error: this is not CUDA\n  a b;\n  ^\n" + warn
    out, _ = _explain(tilelang_message(injected(), OPTIONS), (log, ""))
    assert out is not None
    lines = out.text(max_lines=10).splitlines()
    assert lines[1].strip() == f"{WORKING}(19): error: this is not CUDA" and lines[2].strip() == "a b;"
    assert lines[4].strip().startswith("/usr/include/common.h(0): warning")
    assert lines[-1].endswith("(173 more lines of NVRTC's log)")


class _Session:
    pass


def test_session_seam_explains_only_a_compile_that_injected_an_edit():
    err = RuntimeError(tilelang_message(injected(), OPTIONS, nvrtc_log(WORKING, 4)))
    s = _Session()
    assert cgn.explain_failed_edit(s, err) is None  # nothing PATCHED in this compile
    cgn.note_patched(s, WORKING, "add")
    wrapped = ValueError("adapter failed")
    wrapped.__cause__ = err
    out = cgn.explain_failed_edit(s, wrapped)
    assert out is not None and out.headline.startswith(f"{WORKING}:4: error")
    assert cgn.explain_failed_edit(s, KeyboardInterrupt()) is None
    assert cgn.explain_failed_edit(s, None) is None


# -- the child process: never raises, never hangs -----------------------------------------------------


def test_fetch_without_nvrtc_says_why(tmp_path):
    # This machine's Python, with `cuda` made unimportable: the reason comes back, nothing raises.
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "__init__.py").write_text("raise ImportError('no NVRTC here')\n")
    cmd = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); exec({cgn._CHILD!r})"]
    log, why = cgn.fetch_log("int x;", ("-default-device",), timeout=60, command=cmd)
    assert log is None and "no NVRTC here" in why


def test_fetch_is_bounded_by_its_time_limit():
    cmd = [sys.executable, "-c", "import time; time.sleep(60)"]
    log, why = cgn.fetch_log("int x;", (), timeout=0.5, command=cmd)
    assert log is None and why == "NVRTC took over 0.5s"


def test_fetch_reads_the_childs_reply():
    reply = '{"compiled": false, "log": "W(3): error: boom"}'
    cmd = [sys.executable, "-c", f"import sys; sys.stdin.read(); print('noise'); print({reply!r})"]
    assert cgn.fetch_log("int x;", (), command=cmd) == ("W(3): error: boom", "")
    ok = '{"compiled": true, "log": ""}'
    cmd = [sys.executable, "-c", f"import sys; sys.stdin.read(); print({ok!r})"]
    assert cgn.fetch_log("int x;", (), command=cmd) == (None, "NVRTC compiled it this time")


# -- what the terminal shows --------------------------------------------------------------------------


def _shown(notice) -> list[str]:
    import io

    from rich.console import Console

    from tltrace.config import Settings
    from tltrace.render.terminal import TerminalView

    buf = io.StringIO()
    TerminalView(Settings(context=0), console=Console(file=buf, color_system=None))(notice)
    return buf.getvalue().splitlines()


def test_the_terminal_says_the_error_in_one_line_then_the_log():
    from tltrace.session.events import Notice

    out, _ = _explain(tilelang_message(injected(), OPTIONS), (nvrtc_log(WORKING, 4), ""))
    assert out is not None
    lines = _shown(Notice("COMPILE-ERROR", out.text(), kernel=out.kernel, path=out.path))
    assert lines[0] == f'[add] COMPILE-ERROR  {WORKING}:4: error: expected a ";"'
    assert lines[1] == f'    {WORKING}(4): error: expected a ";"'


def test_a_patched_notice_names_the_files_its_diff_compares():
    from tltrace.session.events import Notice

    n = Notice(
        "PATCHED",
        "from W",
        kernel="add",
        diff=("a\nb\n", "a\nc\n"),
        diff_names=("codegen_device.cpp.original", "codegen_device.cpp"),
    )
    assert _shown(n)[1:3] == ["    --- codegen_device.cpp.original", "    +++ codegen_device.cpp"]


@pytest.mark.gpu
def test_fetch_log_from_a_real_nvrtc(tmp_path):
    """The child against cuda-python's real NVRTC (no GPU needed; where TileLang's nvrtc backend runs)."""
    pytest.importorskip("cuda.bindings.nvrtc")
    working = str(tmp_path / "a dir" / "codegen_device.cpp")
    code = "#define TLTRACE_PREFIX 1\n" + injected(
        working, 'extern "C" __global__ void k(float* A) {\n  A[0] = 1.0f oops;\n}\n'
    )
    log, why = cgn.fetch_log(code, ("-default-device", "--gpu-architecture=compute_80"))
    assert log is not None, why
    f = cgn.NvrtcFailure(code, (), log)
    out = cgn.explain(f, {working: "k"}, lambda c, o: (None, "unused"))
    assert out is not None and out.headline.startswith(f"{working}:2: error: "), log
