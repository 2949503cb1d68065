"""The `--kernel NAME` hint is offered only where it picks something: an invocation whose compiles
are of several kernels (#54: it was printed for several sizes of one kernel, where it opens none)."""

from __future__ import annotations

from ._kernels import KERNELS


def test_one_kernel_at_two_sizes_gets_no_kernel_hint(tmp_path, run_cli) -> None:
    (tmp_path / "sizes.py").write_text(
        KERNELS + "\n\nimport sys\nblock = int(sys.argv[1])\nbuild(128, block)\nbuild(256, block)\n"
    )
    for block in ("64", "32"):  # two invocations; the second's kernels differ from the first's
        r = run_cli("run", "-q", "--trace-dir", "tr", "sizes.py", block)
        assert r.exit_code == 0, r.stdout + r.stderr
    show = run_cli("show", "--trace-dir", "tr", "sizes", "-1")
    assert show.exit_code == 0, show.stderr
    assert "SIGNATURE (a prefix)" in show.stdout and "--kernel" not in show.stdout, show.stdout
    diff = run_cli("diff-runs", "--trace-dir", "tr", "sizes:-2", "sizes:-1")
    assert "one pair pass by pass" in diff.stdout, diff.stdout
    assert "--kernel" not in diff.stdout, diff.stdout
    # The commands that need one compile (repro, show --line, --layouts...) say how to name it, and
    # the name of a kernel is no way when both compiles are of it.
    for args in (("repro", "sizes", "--pass", "1"), ("show", "sizes", "-1", "--line", "3")):
        r = run_cli(*args[:1], "--trace-dir", "tr", *args[1:])
        assert r.exit_code == 2 and "needs one: name it with a signature prefix or a run id" in r.stderr, (
            r.stderr
        )
        assert "--kernel" not in r.stderr, r.stderr


def test_two_kernels_keep_the_kernel_hint(recorded, run_cli) -> None:
    show = run_cli("show", "--trace-dir", recorded, "two_kernels", "-1")
    assert show.exit_code == 0, show.stderr
    assert "or --kernel NAME" in show.stdout, show.stdout
    r = run_cli("repro", "--trace-dir", recorded, "two_kernels", "--pass", "1")
    assert r.exit_code == 2 and "name it with --kernel NAME, a signature prefix or a run id" in r.stderr, (
        r.stderr
    )
