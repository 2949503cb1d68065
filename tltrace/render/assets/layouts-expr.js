/* tltrace layouts: the layout expressions evaluated, and what holds an element (window.TLLayoutExpr).
 *
 * The twin of tltrace/layouts/expr.py and model.py, tested against them on a corpus under node
 * (tests/test_layouts_expr.py): `+ - * // %` on integers and index variables, floor division
 * and floor modulo as in Python; anything else (a call, a cast) throws. A layout entry is the
 * manifest's (docs/layouts.md): a fragment answers thread(s) and register, a shared-memory
 * layout its offset and 4-byte bank.
 */
(function (root) {
  "use strict";

  var TOKEN = /\s*(?:(\d+)|([A-Za-z_]\w*)|(\/\/|[-+*%()]))/y;
  var BANKS = 32, WARP = 32;
  var BITS = { bool: 8, int8: 8, uint8: 8, float16: 16, bfloat16: 16, int16: 16, uint16: 16 };

  function tokens(text) {
    var out = [], pos = 0;
    text = text.replace(/\s+$/, "");
    while (pos < text.length) {
      TOKEN.lastIndex = pos;
      var m = TOKEN.exec(text);
      if (!m || TOKEN.lastIndex === pos) throw new Error("cannot read " + JSON.stringify(text.slice(pos, pos + 20)));
      out.push(m[1] !== undefined ? m[1] : m[2] !== undefined ? m[2] : m[3]);
      pos = TOKEN.lastIndex;
    }
    return out;
  }

  function parse(text) {
    var toks = tokens(String(text)), pos = 0;
    function atom() {
      if (pos >= toks.length) throw new Error("unexpected end of " + text);
      var t = toks[pos];
      if (t === "(") {
        pos++;
        var n = sum();
        if (toks[pos] !== ")") throw new Error("unclosed '(' in " + text);
        pos++;
        return n;
      }
      if (/^\d+$/.test(t)) { pos++; return ["n", parseInt(t, 10)]; }
      if (/^[A-Za-z_]/.test(t)) {
        if (toks[pos + 1] === "(") throw new Error("a call (" + t + ") in " + text);
        pos++;
        return ["v", t];
      }
      throw new Error("unexpected " + t + " in " + text);
    }
    function product() {
      var n = atom();
      while (pos < toks.length && (toks[pos] === "*" || toks[pos] === "//" || toks[pos] === "%")) {
        var op = toks[pos++];
        n = [op, n, atom()];
      }
      return n;
    }
    function sum() {
      var n = product();
      while (pos < toks.length && (toks[pos] === "+" || toks[pos] === "-")) {
        var op = toks[pos++];
        n = [op, n, product()];
      }
      return n;
    }
    var node = sum();
    if (pos !== toks.length) throw new Error("unexpected " + toks[pos] + " in " + text);
    return node;
  }

  function evaluate(n, env) {
    var k = n[0];
    if (k === "n") return n[1];
    if (k === "v") {
      if (!Object.prototype.hasOwnProperty.call(env, n[1])) throw new Error("unknown variable " + n[1]);
      return env[n[1]];
    }
    var a = evaluate(n[1], env), b = evaluate(n[2], env);
    if (k === "+") return a + b;
    if (k === "-") return a - b;
    if (k === "*") return a * b;
    if (k === "//") return Math.floor(a / b);
    return ((a % b) + b) % b;
  }

  // A tree made a function of env (what `at` runs for every cell: no tree walk per element).
  function fn(n) {
    var k = n[0];
    if (k === "n") { var v = n[1]; return function () { return v; }; }
    if (k === "v") {
      var name = n[1];
      return function (env) {
        if (!Object.prototype.hasOwnProperty.call(env, name)) throw new Error("unknown variable " + name);
        return env[name];
      };
    }
    var a = fn(n[1]), b = fn(n[2]);
    if (k === "+") return function (env) { return a(env) + b(env); };
    if (k === "-") return function (env) { return a(env) - b(env); };
    if (k === "*") return function (env) { return a(env) * b(env); };
    if (k === "//") return function (env) { return Math.floor(a(env) / b(env)); };
    return function (env) { var y = b(env); return ((a(env) % y) + y) % y; };
  }

  function dtypeBytes(dtype) {
    if (!dtype) return 4;
    if (BITS[dtype]) return BITS[dtype] / 8;
    var d = String(dtype).split("x")[0].replace(/\D/g, "");
    return d ? Math.max(1, Math.floor(parseInt(d, 10) / 8)) : 4;
  }

  // One entry, compiled once: its expressions parsed, its variables named.
  function compile(entry) {
    var nIn = entry.input_shape.length, extra = entry.vars.length - nIn;
    return {
      entry: entry,
      fragment: entry.kind === "fragment",
      names: entry.vars.slice(extra),
      rep: extra > 0 ? entry.vars[0] : null,
      reps: extra > 0 ? (entry.replicate || 1) : 1,
      index: entry.index.map(function (t) { return fn(parse(t)); }),
      thread: entry.kind === "fragment" ? fn(parse(entry.thread)) : null,
      width: dtypeBytes(entry.dtype)
    };
  }

  function linear(vals, shape) {
    var out = 0;
    for (var i = 0; i < vals.length; i++) out = out * shape[i] + vals[i];
    return out;
  }

  // What holds element `idx`: {thread: [per replica], register} or {offset, bank, width}.
  function at(c, idx) {
    var env = {}, e = c.entry;
    c.names.forEach(function (n, i) { env[n] = idx[i]; });
    var lin = linear(c.index.map(function (f) { return f(env); }), e.output_shape);
    if (c.fragment) {
      var th = [];
      for (var r = 0; r < c.reps; r++) {
        if (c.rep) env[c.rep] = r;
        th.push(c.thread(env));
      }
      return { thread: th, register: lin };
    }
    return { offset: lin, bank: Math.floor(lin * c.width / 4) % BANKS, width: c.width };
  }

  // The grid of the last two dims (1-D: one row) at leading indices `lead`.
  function dims(e) {
    var s = e.input_shape;
    return s.length === 1 ? { rows: 1, cols: s[0] } : { rows: s[s.length - 2], cols: s[s.length - 1] };
  }
  function cellIndex(e, lead, r, col) {
    var s = e.input_shape, out = [];
    for (var i = 0; i < s.length - 2; i++) out.push(lead && lead[i] !== undefined ? lead[i] : 0);
    if (s.length === 1) out.push(col); else out.push(r, col);
    return out;
  }

  // Bank conflicts of one warp after another reading in `access` order ("row" or "col").
  function conflicts(c, access, lead) {
    var d = dims(c.entry), order = [], ways = [];
    if (access === "row") { for (var r = 0; r < d.rows; r++) for (var k = 0; k < d.cols; k++) order.push([r, k]); }
    else { for (var k2 = 0; k2 < d.cols; k2++) for (var r2 = 0; r2 < d.rows; r2++) order.push([r2, k2]); }
    for (var w = 0; w < order.length; w += WARP) {
      var banks = {}, most = 0;
      order.slice(w, w + WARP).forEach(function (p) {
        var word = Math.floor(at(c, cellIndex(c.entry, lead, p[0], p[1])).offset * c.width / 4);
        var b = banks[word % BANKS] || (banks[word % BANKS] = {});
        b[word] = 1;
      });
      Object.keys(banks).forEach(function (b) { most = Math.max(most, Object.keys(banks[b]).length); });
      ways.push(most);
    }
    var total = ways.reduce(function (a, b) { return a + b; }, 0);
    return {
      access: access, width: c.width, warps: ways.length,
      max_ways: ways.length ? Math.max.apply(null, ways) : 0,
      mean_ways: ways.length ? Math.round(total / ways.length * 1000) / 1000 : 0, ways: ways
    };
  }

  // The buffers whose final layout differs between two compiles (lists of meta.layouts.final):
  // [{buffer, func, change: "changed"|"added"|"removed", a, b}]; model.changed_final's twin.
  var KEYS = ["buffer", "kind", "input_shape", "output_shape", "vars", "index", "thread", "replicate", "thread_range"];
  function changed(a, b) {
    function s(v) { return v === undefined || v === null ? "None" : String(v); }
    function byKey(list) {
      var m = new Map();
      (list || []).forEach(function (e) { m.set(JSON.stringify([s(e.func), s(e.buffer)]), e); });
      return m;
    }
    function same(x, y) {
      return KEYS.every(function (k) { return JSON.stringify(x[k] === undefined ? null : x[k]) === JSON.stringify(y[k] === undefined ? null : y[k]); });
    }
    var fa = byKey(a), fb = byKey(b), keys = [];
    fa.forEach(function (v, k) { keys.push(k); });
    fb.forEach(function (v, k) { if (!fa.has(k)) keys.push(k); });
    function cmp(x, y) { return x < y ? -1 : x > y ? 1 : 0; }
    keys.sort(function (x, y) { x = JSON.parse(x); y = JSON.parse(y); return cmp(x[0], y[0]) || cmp(x[1], y[1]); });
    return keys.map(function (k) {
      var ea = fa.get(k), eb = fb.get(k), e = ea || eb;
      if (ea && eb && same(ea, eb)) return null;
      return { buffer: e.buffer === undefined ? null : e.buffer, func: e.func === undefined ? null : e.func,
        change: ea && eb ? "changed" : ea ? "removed" : "added", a: ea || null, b: eb || null };
    }).filter(Boolean);
  }

  var api = {
    tokens: tokens, parse: parse, evaluate: evaluate, fn: fn, dtypeBytes: dtypeBytes, compile: compile,
    at: at, dims: dims, cellIndex: cellIndex, conflicts: conflicts, changed: changed, BANKS: BANKS
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLLayoutExpr = api;
})(typeof window !== "undefined" ? window : this);
