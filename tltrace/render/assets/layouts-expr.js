/* tltrace layouts: the layout expressions evaluated, and what holds an element (window.TLLayoutExpr).
 *
 * The twin of tltrace/layouts/expr.py and model.py, tested against them on a corpus under node
 * (tests/test_layouts_expr.py): `+ - * // %` on integers and index variables, floor division
 * and floor modulo as in Python; anything else (a call, a cast) throws. A layout entry is the
 * manifest's (docs/layouts.md): a fragment answers thread(s) and register, a shared-memory
 * layout its offset and 4-byte bank. A fragment's threads are threadIdx.x: the expression's
 * value plus the first thread of the fragment's thread_range (a warp-specialized consumer's 128).
 * The limits are expr.py's and layouts/check.py's (a manifest is anyone's text): an expression
 * too long or nested too deep, a literal or value beyond 2**53 - 1, a division by zero, a damaged
 * entry all throw, with the same words where they can.
 */
(function (root) {
  "use strict";

  var TOKEN = /\s*(?:(\d+)|([A-Za-z_]\w*)|(\/\/|[-+*%()]))/y;
  var BANKS = 32, WARP = 32;
  var MAX_TEXT = 10000, MAX_DEPTH = 64, MAX_INT = 9007199254740991;  // expr.py's limits
  var MAX_DIMS = 8, MAX_REPLICATE = 1024, MAX_THREADS = 1 << 20;  // check.py's
  var MAX_VIEW = 1 << 20;  // cells the view computes and draws at most (one slice: a 1024x1024 buffer)
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

  function depth(node) {
    var most = 0, stack = [[node, 1]];
    while (stack.length) {
      var top = stack.pop(), n = top[0], d = top[1];
      if (d > most) most = d;
      if (n[0] !== "n" && n[0] !== "v") { stack.push([n[1], d + 1]); stack.push([n[2], d + 1]); }
    }
    return most;
  }

  function parse(text) {
    if (typeof text !== "string") throw new Error("not an expression: " + typeof text);
    if (text.length > MAX_TEXT) throw new Error("an expression of " + text.length + " characters (at most " + MAX_TEXT + ")");
    var toks = tokens(text), pos = 0, nest = 0;
    function atom() {
      if (pos >= toks.length) throw new Error("unexpected end of " + text);
      var t = toks[pos];
      if (t === "(") {
        if (nest >= MAX_DEPTH) throw new Error("parentheses nested deeper than " + MAX_DEPTH);
        pos++; nest++;
        var n = sum();
        nest--;
        if (toks[pos] !== ")") throw new Error("unclosed '(' in " + text);
        pos++;
        return n;
      }
      if (/^\d+$/.test(t)) {
        if (t.length > 16 || parseInt(t, 10) > MAX_INT) throw new Error("the literal " + t.slice(0, 20) + " is beyond " + MAX_INT);
        pos++;
        return ["n", parseInt(t, 10)];
      }
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
    if (depth(node) > MAX_DEPTH) throw new Error("an expression nested deeper than " + MAX_DEPTH);
    return node;
  }

  // One operation, within the limits (expr.py's evaluate does the same checks).
  function op(k, a, b) {
    var v;
    if (k === "+") v = a + b;
    else if (k === "-") v = a - b;
    else if (k === "*") v = a * b;
    else {
      if (b === 0) throw new Error((k === "//" ? "division" : "modulo") + " by zero");
      v = k === "//" ? Math.floor(a / b) : ((a % b) + b) % b;
    }
    if (Math.abs(v) > MAX_INT) throw new Error("a value beyond " + MAX_INT);
    return v;
  }

  function evaluate(n, env) {
    var k = n[0];
    if (k === "n") return n[1];
    if (k === "v") {
      if (!Object.prototype.hasOwnProperty.call(env, n[1])) throw new Error("unknown variable " + n[1]);
      return env[n[1]];
    }
    return op(k, evaluate(n[1], env), evaluate(n[2], env));
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
    // One closure per operator, checks inlined (op's): the view runs these for every cell.
    var a = fn(n[1]), b = fn(n[2]);
    function ok(v) { if (v > MAX_INT || v < -MAX_INT) throw new Error("a value beyond " + MAX_INT); return v; }
    if (k === "+") return function (env) { return ok(a(env) + b(env)); };
    if (k === "-") return function (env) { return ok(a(env) - b(env)); };
    if (k === "*") return function (env) { return ok(a(env) * b(env)); };
    if (n[2][0] === "n" && n[2][1] !== 0) {  // a literal divisor (TileLang's are): no zero to look for
      var d = n[2][1];
      if (k === "//") return function (env) { return Math.floor(a(env) / d); };
      return function (env) { return ((a(env) % d) + d) % d; };
    }
    return function (env) { return op(k, a(env), b(env)); };
  }

  function dtypeBytes(dtype) {
    if (!dtype) return 4;
    if (BITS[dtype]) return BITS[dtype] / 8;
    var d = String(dtype).split("x")[0].replace(/\D/g, "");
    return d ? Math.max(1, Math.floor(parseInt(d, 10) / 8)) : 4;
  }

  function isInt(v) { return typeof v === "number" && Number.isSafeInteger(v); }
  function shape(v, what, name) {
    if (!Array.isArray(v) || v.length < 1 || v.length > MAX_DIMS) throw new Error(name + ": " + what + " is not a list of 1 to " + MAX_DIMS + " sizes");
    var total = 1;
    v.forEach(function (d) {
      if (!isInt(d) || d < 1) throw new Error(name + ": " + what + " holds " + String(d).slice(0, 40) + ", not a positive size");
      total *= d;
      if (total > MAX_INT) throw new Error(name + ": " + what + " has more than " + MAX_INT + " elements");
    });
    return v;
  }
  // layouts/check.py's `entry`: a damaged entry, or one beyond the limits, throws.
  function checkEntry(e) {
    if (!e || typeof e !== "object") throw new Error("a layout entry is not an object");
    var name = typeof e.buffer === "string" ? e.buffer.slice(0, 80) : "?";
    var ins = shape(e.input_shape, "input_shape", name);
    shape(e.output_shape, "output_shape", name);
    if (!Array.isArray(e.vars) || !e.vars.every(function (v) { return typeof v === "string" && /^[A-Za-z_]\w{0,63}$/.test(v); })) {
      throw new Error(name + ": vars is not a list of names");
    }
    var extra = e.vars.length - ins.length, frag = e.kind === "fragment";
    if (!(extra === 0 || (frag && extra === 1))) throw new Error(name + ": " + e.vars.length + " vars for " + ins.length + " dimensions");
    if (!Array.isArray(e.index) || e.index.length !== e.output_shape.length) throw new Error(name + ": index is not one expression per output dimension");
    if (frag) {
      if (typeof e.thread !== "string") throw new Error(name + ": a fragment without a thread expression");
      var rep = e.replicate;
      if (rep !== null && rep !== undefined && !(isInt(rep) && rep >= 1 && rep <= MAX_REPLICATE)) throw new Error(name + ": replicate is not a count from 1 to " + MAX_REPLICATE);
      var rng = e.thread_range;
      if (rng !== null && rng !== undefined && !(Array.isArray(rng) && rng.length === 2 && isInt(rng[0]) && isInt(rng[1]) &&
          rng[0] >= 0 && rng[1] >= 1 && rng[0] + rng[1] <= MAX_THREADS)) {
        throw new Error(name + ": thread_range is not [first, count] of threads below " + MAX_THREADS);
      }
    }
    return e;
  }

  // One entry, compiled once: checked, its expressions parsed, its variables named.
  function compile(entry) {
    checkEntry(entry);
    var nIn = entry.input_shape.length, extra = entry.vars.length - nIn;
    return {
      entry: entry,
      fragment: entry.kind === "fragment",
      names: entry.vars.slice(extra),
      rep: extra > 0 ? entry.vars[0] : null,
      reps: extra > 0 ? (entry.replicate || 1) : 1,
      index: entry.index.map(function (t) { return fn(parse(t)); }),
      thread: entry.kind === "fragment" ? fn(parse(entry.thread)) : null,
      first: entry.kind === "fragment" && entry.thread_range ? entry.thread_range[0] : 0,  // threadIdx.x of thread 0
      width: dtypeBytes(entry.dtype)
    };
  }

  function linear(vals, shape) {
    var out = 0;
    for (var i = 0; i < vals.length; i++) out = out * shape[i] + vals[i];
    return out;
  }

  // What holds element `idx`: {thread: [threadIdx.x per replica], register, logical_thread: [the
  // expression's], thread_range} or {offset, bank, width} (model.at's twin).
  function at(c, idx) {
    var env = {}, e = c.entry;
    c.names.forEach(function (n, i) { env[n] = idx[i]; });
    var lin = linear(c.index.map(function (f) { return f(env); }), e.output_shape);
    if (c.fragment) {
      var th = [], phys = [];
      for (var r = 0; r < c.reps; r++) {
        if (c.rep) env[c.rep] = r;
        var t = c.thread(env);
        th.push(t); phys.push(t + c.first);
      }
      return { thread: phys, register: lin, logical_thread: th, thread_range: e.thread_range === undefined ? null : e.thread_range };
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
    at: at, dims: dims, cellIndex: cellIndex, conflicts: conflicts, changed: changed, BANKS: BANKS,
    checkEntry: checkEntry, MAX_VIEW: MAX_VIEW
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLLayoutExpr = api;
})(typeof window !== "undefined" ? window : this);
