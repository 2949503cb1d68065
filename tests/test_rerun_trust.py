"""A bundle (or a run) from a stranger runs nothing it chooses (issue 27; docs/rerun.md, "Trust").

The hostile bundles are made for real: an sm_90a lowering traced on this CPU machine
(CUDA codegen, no GPU) and bundled, then its bundle.json says the recording compiled
device code and its context.json adds `tl.device_compile_flags` that reach nvcc's shell.
A CPU kernel's IR carries a host constructor (`pragma_import_c`) and a `call_extern`;
compiled and loaded, its recorded source writes a file. Compilers are watched: nvcc, gcc,
g++, cc, c++, clang and cython on PATH, CC, CXX and CUDA_HOME are wrappers that log their
command line (and then run the real tool), so "no compiler started" is checked, not assumed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tltrace.render.visible import visible
from tltrace.rerun import trust

from ._cli import cli_env, cli_proc
from ._kernels import doubling

SM90 = (
    '''
"""An elementwise kernel lowered for sm_90a on the CPU: CUDA codegen, no GPU."""
import tilelang
import tilelang.language as T
from tilelang import tvm

'''
    + doubling()
    + """

target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    tilelang.lower(scale, target=target)
"""
)

# A host constructor in the generated C (pragma_import_c is emitted at file scope) and a
# call_extern. The recording compiles and loads it (cython), so the constructor runs there
# and writes MARKER: the bundle is hostile for real.
HOOKED = '''
"""A CPU kernel whose generated source, once compiled and loaded, runs a constructor."""
import tilelang
import tilelang.language as T

HOOK = (
    "#include <stdio.h>\\n"
    "__attribute__((constructor)) static void tltrace_hook(void) {\\n"
    '  FILE *f = fopen("MARKER", "w");\\n'
    "  if (f) fclose(f);\\n"
    "}\\n"
)


@T.prim_func
def hooked(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "int32")):
    with T.Kernel(1, threads=64) as bx:
        T.attr(0, "pragma_import_c", HOOK)
        for i in T.Parallel(64):
            B[i] = T.call_extern("int32", "abs", A[i])


tilelang.compile(hooked, target="c", execution_backend="cython")
'''

WATCHED = ("nvcc", "gcc", "g++", "cc", "c++", "clang", "clang++", "cython", "cythonize")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return cli_env(**(extra or {}))


def _tltrace(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, env=env)


def _traced_bundle(work: Path, name: str, source: str) -> Path:
    (work / f"{name}.py").write_text(source)
    p = _tltrace("run", "--quiet", "--trace-dir", "tr", f"{name}.py", cwd=work)
    assert p.returncode == 0, p.stderr[-2000:]
    out = work / f"{name}.zip"
    p = _tltrace("bundle", "--trace-dir", "tr", f"{name}.py", "-o", str(out), cwd=work)
    assert p.returncode == 0, p.stderr[-2000:]
    return out


def _rewrite(src: Path, dest: Path, edit) -> Path:
    """Copy a bundle, passing each member's (name, data) through `edit` (which returns the new data)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        zout.comment = zin.comment
        for info in zin.infolist():
            zout.writestr(info, edit(info.filename, zin.read(info)))
    return dest


def _hostile(src: Path, dest: Path, flags: list[str]) -> Path:
    """The bundle with its compiles marked as compiling device code and `flags` as device compile flags."""

    def edit(name: str, data: bytes) -> bytes:
        if name == "bundle.json":
            info = json.loads(data)
            for c in info["compiles"]:
                c["flags"]["device_compile"] = True
            return json.dumps(info).encode()
        if name.endswith("/context.json"):
            context = json.loads(data)
            context["config"]["tl.device_compile_flags"] = flags
            return json.dumps(context).encode()
        return data

    return _rewrite(src, dest, edit)


@pytest.fixture(scope="module")
def sm90(tmp_path_factory) -> Path:
    """A real sm_90a bundle made on this CPU machine."""
    return _traced_bundle(tmp_path_factory.mktemp("sm90"), "sm90", SM90)


@pytest.fixture
def watch(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment in which every compiler a build would start logs its command line to LOG first."""
    bin_dir, cuda = tmp_path / "watch" / "bin", tmp_path / "watch" / "cuda"
    (cuda / "bin").mkdir(parents=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "watch" / "log"
    for tool in WATCHED:
        real = shutil.which(tool)
        body = f'#!/bin/sh\necho "{tool} $*" >> {log}\n' + (f'exec {real} "$@"\n' if real else "exit 1\n")
        for where in (bin_dir / tool, cuda / "bin" / tool):
            where.write_text(body)
            where.chmod(0o755)
    cuda_include = Path("/usr/local/cuda/include")
    if cuda_include.is_dir():
        (cuda / "include").symlink_to(cuda_include)
    env = _env(
        {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "CC": str(bin_dir / "cc"),
            "CXX": str(bin_dir / "c++"),
            "CUDA_HOME": str(cuda),
            "CUDA_PATH": str(cuda),
        }
    )
    return env, log


def _one_line(stdout: str, start: str) -> str:
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith(start)]
    return line


@pytest.mark.compile
@pytest.mark.parametrize(
    "flags",
    [["-Xcompiler=-DX;touch${IFS}PWNED;#"], ["-ccbin", "SCRIPT"]],
    ids=["xcompiler-shell", "ccbin-script"],
)
def test_a_hostile_bundle_runs_nothing_without_build(sm90: Path, watch, tmp_path: Path, flags) -> None:
    env, log = watch
    pwned = tmp_path / "PWNED"
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch {pwned}\nexec g++ "$@"\n')
    script.chmod(0o755)
    flags = [f.replace("PWNED", str(pwned)).replace("SCRIPT", str(script)) for f in flags]
    bundle = _hostile(sm90, tmp_path / "hostile.zip", flags)
    here = tmp_path / "downloads"
    here.mkdir()
    p = _tltrace("replay", str(bundle), cwd=here, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not pwned.exists() and not (here / "PWNED").exists()
    assert not log.exists(), log.read_text()  # no compiler was started
    line = _one_line(p.stdout, "not applied:")
    assert "tl.device_compile_flags" in line and "--build" in line
    assert "source-only codegen" in _one_line(p.stdout, "00_kernel: the recording compiled device code")
    assert ": same: " in p.stdout.splitlines()[-1]
    assert not list(here.iterdir())


@pytest.mark.compile
def test_build_says_what_it_runs_then_runs_it(sm90: Path, watch, tmp_path: Path) -> None:
    """The same hostile bundle with --build: the flags are printed, then nvcc's shell runs them."""
    env, log = watch
    pwned = tmp_path / "PWNED"
    flag = f"-Xcompiler=-DX;touch${{IFS}}{pwned};#"
    bundle = _hostile(sm90, tmp_path / "hostile.zip", [flag])
    p = _tltrace("replay", "--build", str(bundle), cwd=tmp_path, env=env)
    first = p.stdout.splitlines()[0]
    assert first.startswith("--build: 00_kernel: runs TileLang's device compile"), p.stdout
    assert json.dumps(flag) in first and '"arch": "sm_90a"' in first
    assert "not applied" not in p.stdout
    assert "nvcc " in log.read_text() and flag in log.read_text()
    assert pwned.exists()  # the bundle is hostile for real: --build is the user's decision


def _codegen_text(bundle: Path) -> str:
    with zipfile.ZipFile(bundle) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith("/manifest.json")]
        manifest = json.loads(zf.read(name))
        from tltrace.format.records import RunManifest

        (rec,) = [r for r in RunManifest.from_json(manifest).records if r.status == "codegen"]
        return zf.read(f"texts/{rec.after_hash}").decode()


@pytest.mark.compile
def test_ir_with_a_host_constructor_is_compared_never_built_nor_loaded(watch, tmp_path: Path) -> None:
    marker = tmp_path / "HOOKED"
    work = tmp_path / "work"
    work.mkdir()
    bundle = _traced_bundle(work, "hooked", HOOKED.replace("MARKER", str(marker)))
    assert marker.exists()  # the recording built and loaded it: the constructor ran there
    marker.unlink()
    source = _codegen_text(bundle)
    assert "__attribute__((constructor))" in source and "abs(A[i])" in source

    env, log = watch
    for args in (("replay",), ("replay", "--build")):  # a CPU compile builds nothing even with --build
        p = _tltrace(*args, str(bundle), cwd=tmp_path, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert re.search(r"^hooked( \d+)?: same: ", p.stdout, re.M) and "generated source" in p.stdout
        assert not marker.exists()
        assert not log.exists(), log.read_text()


@pytest.mark.compile
def test_a_shadowing_tilelang_py_beside_the_bundle_is_never_imported(sm90: Path, tmp_path: Path) -> None:
    marker = tmp_path / "SHADOWED"
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    shutil.copy(sm90, downloads / "sm90.zip")
    (downloads / "tilelang.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise SystemExit('shadow')\n"
    )
    p = _tltrace(
        "replay", "sm90.zip", cwd=downloads
    )  # `python -m tltrace`: the cwd is the parent's sys.path[0]
    assert p.returncode == 0, p.stdout + p.stderr
    assert ": same: " in p.stdout and not marker.exists()


@pytest.mark.compile
def test_repro_and_its_child_never_import_from_the_directory(sm90: Path, tmp_path: Path) -> None:
    """tltrace repro's probe and repro.py's own child: a tilelang.py in the repro dir or the cwd is not run."""
    work = sm90.parent
    marker = tmp_path / "SHADOWED"
    shadow = f"open({str(marker)!r}, 'w').close()\nraise SystemExit('shadow')\n"
    out = tmp_path / "r"
    out.mkdir()
    (out / "tilelang.py").write_text(shadow)
    (tmp_path / "tilelang.py").write_text(shadow)
    p = _tltrace(
        "repro",
        "--trace-dir",
        str(work / "tr"),
        "sm90.py",
        "--pass",
        "0",
        "-o",
        str(out),
        "--force",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-2] == "reproduced" and not marker.exists()
    p = subprocess.run(
        [sys.executable, str(out / "repro.py")],
        cwd=out,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip().endswith("reproduced") and not marker.exists()


def test_the_nvrtc_log_child_never_imports_from_its_directory(tmp_path: Path) -> None:
    """The NVRTC child's first import is json: a json.py in its directory must not be the one."""
    from tltrace.session import codegen_nvrtc as cgn

    marker = tmp_path / "SHADOWED"
    (tmp_path / "json.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    subprocess.run(
        cgn.child_command(),
        input='{"code": "", "options": [], "name": "x"}',
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not marker.exists()


def test_the_allow_list_is_tilelangs_boolean_and_numeric_pass_configs() -> None:
    """trust.PASS_CONFIGS against the installed TileLang: PassConfigKey's names and TVM's registered types."""
    from tilelang import tvm
    from tilelang.transform.pass_config import PassConfigKey

    registered = {k: str(v["type"]) for k, v in tvm.transform.PassContext.list_configs().items()}
    keys = {k.value for k in PassConfigKey if "." in k.value}  # the Simplify sub-keys have no namespace
    numeric = {k for k in keys if registered.get(k) in ("ir.IntImm", "ir.FloatImm")}
    assert numeric - set(trust.PASS_CONFIGS) == set(trust.WRITES_FILES)
    for name, kind in trust.PASS_CONFIGS.items():
        assert name in keys, name
        want = {"bool": "ir.IntImm", "int": "ir.IntImm", "float": "ir.FloatImm"}.get(kind)
        if kind == trust.SIMPLIFY:
            assert registered[name].endswith("SimplifyConfig")
        elif name in registered:  # a few PassConfigKey names are not registered in every release
            assert registered[name] == want, name
    for name in keys - set(trust.PASS_CONFIGS) - set(trust.WRITES_FILES):
        assert registered.get(name) not in ("ir.IntImm", "ir.FloatImm"), name  # a string, an array: dropped
    simplify = {k.value for k in PassConfigKey if "." not in k.value}
    assert simplify == set(trust.SIMPLIFY_FIELDS)


def test_a_config_keeps_data_and_names_the_rest() -> None:
    simplify = {
        "tvm_json": json.dumps(
            {
                "root_index": 0,
                "nodes": [
                    {"type": "tl.transform.SimplifyConfig", "data": {"enable_simplify_let_inline": False}}
                ],
            }
        )
    }
    config = {
        "tl.disable_tma_lower": True,
        "tl.ptxas_register_usage_level": 3,
        "tl.pass_profile_threshold_ms": 1.5,
        "tl.Simplify": simplify,
        "tl.device_compile_flags": ["-ccbin", "/x"],
        "tl.layout_cost_model": "io-aware",
        "tirx.add_lower_pass": [{"tvm_json": "{}"}],
        "tl.enable_dump_ir": True,
        "tl.config_index_bitwidth": "64",
        "tl.pass_profile_threshold_ms_typo": 1,
    }
    applied, dropped = trust.filter_config(config)
    assert applied == {
        "tl.disable_tma_lower": True,
        "tl.ptxas_register_usage_level": 3,
        "tl.pass_profile_threshold_ms": 1.5,
        "tl.Simplify": {"enable_simplify_let_inline": False},
    }
    assert dropped == sorted(set(config) - set(applied))
    context = {"opt_level": 2, "config": config, "target": {"kind": "c", "keys": ["cpu"], "tag": ""}}
    plan = trust.plan(context, {"host_codegen": True, "device_compile": True})
    assert plan.flags == {"host_codegen": True, "device_compile": False} and plan.device_compile_skipped
    assert plan.context["config"] == applied and plan.not_applied == tuple(dropped)
    built = trust.plan(context, {"host_codegen": True, "device_compile": True}, build=True)
    assert built.flags["device_compile"] and built.context["config"] == config and not built.not_applied


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ({"kind": "cuda", "arch": "sm_90a", "libs": ["cublas"]}, "'libs'"),
        ({"kind": "cuda", "arch": "sm_90a -ccbin /tmp/x"}, "target arch"),
        ({"kind": "llvm", "cl-opt": ["-x"]}, "'cl-opt'"),
        ({"kind": "ext_dev"}, "kind 'ext_dev'"),
        ({"kind": "cuda", "host": {"kind": "cuda"}}, "kind 'cuda'"),
        ({"kind": "c", "host_compiler": "/bin/sh"}, "unknown target key"),
        ({"kind": "c", "mcpu": "x; rm -rf /"}, "target mcpu"),
        ("cuda -arch=sm_90a", "not a target object"),
    ],
)
def test_a_target_that_is_not_plain_is_refused(target, why) -> None:
    from tltrace.errors import RecordsError

    with pytest.raises(RecordsError, match=why):
        trust.plan({"target": target, "config": {}}, {})


def _bundle_with_target(src: Path, dest: Path, target) -> Path:
    def edit(name: str, data: bytes) -> bytes:
        if name.endswith("/context.json"):
            context = json.loads(data)
            context["target"] = context["bound_target"] = target
            return json.dumps(context).encode()
        return data

    return _rewrite(src, dest, edit)


def test_replay_refuses_a_bundle_whose_target_reaches_a_command_line(run_cli, tmp_path: Path) -> None:
    data = Path(__file__).resolve().parent / "data" / "bundle_0.1.15_add.zip"
    bundle = _bundle_with_target(
        data, tmp_path / "t.zip", {"kind": "cuda", "arch": "sm_90a;id", "keys": ["cuda"]}
    )
    r = run_cli("replay", str(bundle))
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and "refused" in r.stderr
    assert r.stdout == ""


def test_standalone_repro_shows_control_characters_as_tltrace_does() -> None:
    from tltrace.rerun import _standalone

    text = "".join(chr(c) for c in range(0x00, 0xA0)) + "é\u2028\u2029"
    assert _standalone.visible(text) == visible(text)
    assert _standalone.visible(text, one_line=True) == visible(text, one_line=True)


@pytest.mark.compile
def test_repro_prints_a_pass_name_from_a_manifest_in_cat_v_form(sm90: Path, tmp_path: Path) -> None:
    from tltrace.history import runs

    from ._records import read_manifest

    src = runs.open_selection("sm90.py", None, sm90.parent / "tr", None).one().path
    copy = tmp_path / "theirs" / ".run_records" / src.name
    shutil.copytree(src, copy)
    data = read_manifest(copy)
    rec = next(r for r in data["records"] if r["status"] == "changed")
    rec["name"] = "Simplify\x1b]0;owned\x07\x1b[2J"
    (copy / "manifest.json").chmod(0o644)
    (copy / "manifest.json").write_text(json.dumps(data))
    out = tmp_path / "r"
    p = _tltrace("repro", str(copy), "--pass", str(rec["index"]), "-o", str(out), cwd=tmp_path)
    # The replay reaches another pass than the crafted name: one line, exit 5 (errors.py).
    assert p.returncode == 5, p.stdout + p.stderr
    assert "does not reach the pass recorded" in p.stderr and p.stderr.count("\n") <= 2
    for text in (p.stdout, p.stderr):
        assert "\x1b" not in text and "\x07" not in text
    assert "rerunning Simplify^[]0;owned^G^[[2J" in p.stderr
    p = subprocess.run(
        [sys.executable, str(out / "repro.py")], capture_output=True, text=True, env=_env(), timeout=600
    )
    assert "\x1b" not in p.stdout + p.stderr and "\x07" not in p.stdout + p.stderr
    assert "pass Simplify^[]0;owned^G^[[2J" in p.stdout
