"""render/bundle.py: the scripts' declared dependencies put in order, and the assets inlined without comments.

Each script in render/assets names what it needs loaded before it (`@requires` in its leading
comment); a page names the script that starts it. A missing script or a cycle stops the build
with one clear error. The minifier keeps every token and every line break between tokens (so
semicolon insertion reads the script as written): the tokens of each asset before and after are
compared by ESLint's own tokenizer (espree) where it is installed (.ci/run's "js lint" step puts
it in $TLTRACE_ESLINT_DIR), and node parses every minified asset. Nothing is compiled.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from tests._node import node
from tltrace.render.bundle import AssetError, minify_css, minify_js, requires_of, script_order
from tltrace.render.pages import LATE_SCRIPTS, STAGE_JS, UNPACK_JS, index_head, report_head

ASSETS = resources.files("tltrace.render").joinpath("assets")
PAGES = {"report.html": "report.js", "index.html": "index.js", "diffruns.html": "diffruns.js"}


def scripts() -> list[str]:
    return sorted(p.name for p in ASSETS.iterdir() if p.name.endswith(".js"))


# -- the order -------------------------------------------------------------------------------------
def test_every_script_comes_after_what_it_requires_and_each_page_reaches_its_own() -> None:
    reached: set[str] = set()
    for entry in PAGES.values():
        order = script_order([entry])
        assert order[-1] == entry and len(order) == len(set(order))
        for i, name in enumerate(order):
            for dep in requires_of(ASSETS.joinpath(name).read_text(encoding="utf-8")):
                assert dep in order[:i], (
                    f"{name} requires {dep}, which {entry}'s page loads later or not at all"
                )
        reached.update(order)
    # The PTX/SASS views' script, appended to a report with a stage record: what it needs is in the head.
    report = script_order(["report.js"])
    assert set(requires_of(ASSETS.joinpath(STAGE_JS).read_text(encoding="utf-8"))) <= set(report)
    reached.add(STAGE_JS)
    reached.add(UNPACK_JS)  # the report's head runs it before its (packed) script: it requires nothing
    assert not requires_of(ASSETS.joinpath(UNPACK_JS).read_text(encoding="utf-8"))
    assert reached == set(scripts()), f"scripts no page loads: {set(scripts()) - reached}"
    # The index needs neither the diff engine nor the report's views; diff-runs the core and the
    # layouts view (both grids of a changed layout). The report carries layouts.js after its data,
    # only for compiles with layouts (render/pages.py layouts_tag): its head never does.
    index = script_order(["index.js"])
    assert not any(n == "diff.js" or n.startswith("report") for n in index)
    assert script_order(["diffruns.js"]) == ["core.js", "layouts-expr.js", "layouts.js", "diffruns.js"]
    assert "layouts.js" not in script_order(["report.js"])


def test_every_script_requires_the_scripts_whose_globals_it_uses() -> None:
    # A script's one global (window.TLCore, window.tltraceProfile, ...) is its name to the others:
    # a script that uses another's global, outside its comments, must declare that script.
    src = {n: ASSETS.joinpath(n).read_text(encoding="utf-8") for n in scripts()}
    code = {n: minify_js(s) for n, s in src.items()}  # without comments
    defines: dict[str, str] = {}
    for name, text in code.items():
        for glob in re.findall(r"(?:root|window|scope)\.(TL\w+|tltrace\w+)=", text):
            assert defines.setdefault(glob, name) == name, f"{glob} is defined twice"
    assert {"TLCore", "TLDiff", "TLReport", "tltraceSourceMap"} <= set(defines)
    for name, text in code.items():
        used = {g for g in re.findall(r"\b(TL\w+|tltrace\w+)\b", text) if g in defines}
        missing = {defines[g] for g in used} - set(requires_of(src[name])) - {name}
        # A late script (pages.LATE_SCRIPTS) comes among the data chunks, or not at all: whoever
        # uses it looks for it on `window` first.
        for late in missing & set(LATE_SCRIPTS):
            for g in (g for g in used if defines[g] == late):
                assert re.search(rf"if\(window\.{g}\)", text), f"{name} uses {g} unguarded"
        missing -= set(LATE_SCRIPTS)
        assert not missing, f"{name} uses the globals of {sorted(missing)} without @requires"


def fake(files: dict[str, str]):
    return (lambda n: files[n]), (lambda n: n in files)


def test_a_missing_script_is_named_with_the_one_that_requires_it() -> None:
    read, exists = fake(
        {"page.js": "/* the page\n * @requires a.js\n */\n", "a.js": "/* a\n * @requires gone.js\n */\n"}
    )
    with pytest.raises(AssetError, match=r"a\.js requires gone\.js, which does not exist"):
        script_order(["page.js"], read, exists)
    with pytest.raises(AssetError, match=r"the page starts nothing\.js, which does not exist"):
        script_order(["nothing.js"], read, exists)


def test_a_cycle_is_named_link_by_link() -> None:
    read, exists = fake(
        {
            "page.js": "/* @requires a.js */",
            "a.js": "/* a\n * @requires b.js\n */",
            "b.js": "/* b\n * @requires c.js, a.js\n */",
            "c.js": "/* c, no needs */",
        }
    )
    with pytest.raises(AssetError, match=r"cycle: a\.js -> b\.js -> a\.js"):
        script_order(["page.js"], read, exists)


def test_only_the_leading_comment_declares_and_order_follows_declarations() -> None:
    read, exists = fake(
        {
            "page.js": "/* page\n * @requires b.js a.js\n */\n// @requires c.js (not a declaration)\n",
            "a.js": "/* a */",
            "b.js": "/* b\n * @requires a.js\n */",
            "c.js": "",
        }
    )
    assert script_order(["page.js"], read, exists) == ["a.js", "b.js", "page.js"]


def test_the_real_pages_fail_on_a_broken_declaration(tmp_path: Path) -> None:
    # The real report's graph with one edge added back to its start: the build names the cycle.
    real = {n: ASSETS.joinpath(n).read_text(encoding="utf-8") for n in scripts()}
    real["core.js"] = real["core.js"].replace(
        "/* tltrace page core", "/* @requires report.js\n * tltrace page core", 1
    )
    read, exists = fake(real)
    with pytest.raises(AssetError, match=r"cycle: .*core\.js -> report\.js"):
        script_order(["report.js"], read, exists)


# -- the minifier ----------------------------------------------------------------------------------
CASES = [
    ("a = b + +c; d = e + ++f; g = h - --i;", "a=b+ +c;d=e+ ++f;g=h- --i;"),
    ("if (a-- > b && c < !d) x = y / /re/.exec(z)[0];", "if(a-- >b&&c< !d)x=y/ /re/.exec(z)[0];"),
    ("a = b - -c;", "a=b- -c;"),
    ("x = a / b / c;", "x=a/b/c;"),
    (
        'if (/\\/\\/ x/.test(s)) return "// not a comment"; // a comment',
        'if(/\\/\\/ x/.test(s))return"// not a comment";',
    ),
    ("var r = /[/*]+/g, s = '/* kept */';", "var r=/[/*]+/g,s='/* kept */';"),
    ("return /x/.test(s)", "return/x/.test(s)"),
    ("var t = /x/g instanceof RegExp, u = /y/ in o;", "var t=/x/g instanceof RegExp,u=/y/ in o;"),
    ("f(a)\n/* two\nlines */ ++b", "f(a)\n++b"),
    ("a();\n  b = {\n    c: 1,\n    d: 2\n  }\n  e()\n", "a();b={c:1,d:2}\ne()"),
    ("return   // nothing\n  x", "return\nx"),
    ("var n = 1 .toFixed(2), m = 1.5.toFixed(1);", "var n=1 .toFixed(2),m=1.5.toFixed(1);"),
    ("if (a) { b(); } else { c(); }", "if(a){b();}else{c();}"),
    ('typeof x === "string" && x in o', 'typeof x==="string"&&x in o'),
    ('s = "a\\\n  b";', 's="a\\\n  b";'),
    ("a = b\n  (c)", "a=b\n(c)"),
]


@pytest.mark.parametrize(("src", "want"), CASES)
def test_minify_js_keeps_tokens_and_line_breaks(src: str, want: str) -> None:
    assert minify_js(src) == want + "\n"
    assert minify_js(want) == want + "\n"  # a fixed point


def test_minify_js_refuses_what_it_does_not_read() -> None:
    with pytest.raises(AssetError, match="template literals"):
        minify_js("var s = `x`;")


def test_minify_css_keeps_selectors_and_strings() -> None:
    css = '/* c */ a > b:hover ,  .x  .y {\n  content: "a  ;  b";\n  margin: 0 auto;\n}\n@media (max-width: 900px) { .z { width: calc(1px + 2px); } }\n'
    assert minify_css(css) == (
        'a>b:hover,.x .y{content:"a  ;  b";margin:0 auto}@media (max-width:900px){.z{width:calc(1px + 2px)}}\n'
    )


def test_every_minified_asset_parses_and_keeps_its_tokens(tmp_path: Path) -> None:
    exe = node()
    for name in scripts():
        src = ASSETS.joinpath(name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(src, encoding="utf-8")
        (tmp_path / ("min-" + name)).write_text(minify_js(src), encoding="utf-8")
        subprocess.run([exe, "--check", str(tmp_path / ("min-" + name))], check=True, timeout=60)
    eslint_dir = os.environ.get("TLTRACE_ESLINT_DIR")
    espree = Path(eslint_dir or "/nonexistent") / "node_modules" / "espree"
    if not espree.is_dir():
        if eslint_dir or os.environ.get("CI"):
            pytest.fail(
                f"no espree under TLTRACE_ESLINT_DIR ({eslint_dir}); .ci/run's js lint step installs it"
            )
        pytest.skip("espree (ESLint's tokenizer) is not installed: set TLTRACE_ESLINT_DIR")
    compare = r"""
const espree = require(process.argv[1]);
const fs = require("fs");
const out = {};
for (const name of JSON.parse(process.argv[3])) {
  // Each token, and whether a line break comes before it where one can matter (not after ; { ,
  // nor before }: no semicolon is inserted there, or one is either way).
  const tok = f => espree.tokenize(fs.readFileSync(process.argv[2] + "/" + f, "utf8"), { ecmaVersion: 2020, loc: true })
    .map((t, i, all) => [t.type, t.value, i > 0 && t.loc.start.line !== all[i - 1].loc.end.line &&
      !";{,".includes(all[i - 1].value) && t.value !== "}"]);
  const a = tok(name), b = tok("min-" + name);
  out[name] = JSON.stringify(a) === JSON.stringify(b) ? a.length : "differs";
}
process.stdout.write(JSON.stringify(out));
"""
    proc = subprocess.run(
        [exe, "-e", compare, str(espree), str(tmp_path), json.dumps(scripts())],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    got = json.loads(proc.stdout)
    assert all(isinstance(n, int) and n > 100 for n in got.values()), got


def test_the_heads_carry_no_comments_and_their_csp_names_the_script() -> None:
    import base64
    import hashlib
    import zlib

    for head in (report_head(), index_head()):
        page = head.decode("utf-8")
        script = re.search(r"<script>(.*?)</script>", page, re.S)
        assert script, "the page's one inline script"
        js = [script.group(1)]
        # The report's script travels packed (render/pages.py `packed`), before unpack.js.
        for m in re.finditer(r'<script type="text/x-tltrace-z">([^<]*)</script>', page):
            js.append(zlib.decompress(base64.b64decode(m.group(1)), -15).decode("utf-8"))
        assert len(js) == (2 if head == report_head() else 1)
        for text in js:
            assert "@requires" not in text and "\n  " not in text  # no comments, no indentation
            digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in page
