/* tltrace diff engine (browser twin of tltrace/diff/, the Python engine).
 *
 * align(A, B) -> rows [{kind, a, b}] with kind same | reindent | change | add | del and 0-based
 * line numbers (null where a side has no line). The rules are stated in tltrace/diff/align.py;
 * this file follows that code step for step (same loops, same tie-breaking), and
 * tests/test_diff_engine.py runs both over a corpus of real IR and compares the rows.
 * Runs in the report (as window.TLDiff) and under node (module.exports).
 */
(function (root) {
  "use strict";

  var MAX_D = 1000;           // edit distance past which a middle section is treated as replaced whole
  var MAX_WORD_TOKENS = 2000; // past this many tokens in a pair, the whole line is marked changed
  var ALIKE = 500;            // similarity (per mille, Dice of the words) at which two lines pair
  var PAIR_LIMIT = 40000;     // removed x added lines in one gap past which pairing looks only WINDOW ahead
  var WINDOW = 16;
  var EQ = 0, DEL = 1, ADD = 2;

  // ---- Myers' O(ND) diff over integer arrays; ops [EQ, i, j] / [DEL, i, -1] / [ADD, -1, j] ----
  function myers(a, b) {
    var n = a.length, m = b.length, s = 0, ops = [], i;
    while (s < n && s < m && a[s] === b[s]) s++;
    var ea = n, eb = m;
    while (ea > s && eb > s && a[ea - 1] === b[eb - 1]) { ea--; eb--; }
    for (i = 0; i < s; i++) ops.push([EQ, i, i]);
    var mid = middle(a, s, ea, b, s, eb);
    for (i = 0; i < mid.length; i++) ops.push(mid[i]);
    for (i = 0; i < n - ea; i++) ops.push([EQ, ea + i, eb + i]);
    return ops;
  }
  function replaced(a0, a1, b0, b1) {
    var ops = [], i;
    for (i = a0; i < a1; i++) ops.push([DEL, i, -1]);
    for (i = b0; i < b1; i++) ops.push([ADD, -1, i]);
    return ops;
  }
  function middle(a, a0, a1, b, b0, b1) {
    var N = a1 - a0, M = b1 - b0;
    if (N === 0 || M === 0) return replaced(a0, a1, b0, b1);
    var limit = Math.min(N + M, MAX_D);
    var off = limit + 1;
    var v = new Int32Array(2 * limit + 3);
    var trace = [];
    var found = -1, d, k, x, y;
    for (d = 0; d <= limit && found < 0; d++) {
      trace.push(v.slice(off - d - 1, off + d + 2));  // v before step d, for k in [-d-1, d+1]
      for (k = -d; k <= d; k += 2) {
        if (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) x = v[off + k + 1];
        else x = v[off + k - 1] + 1;
        y = x - k;
        while (x < N && y < M && a[a0 + x] === b[b0 + y]) { x++; y++; }
        v[off + k] = x;
        if (x >= N && y >= M) { found = d; break; }
      }
    }
    if (found < 0) return replaced(a0, a1, b0, b1);
    var rev = [];
    x = N; y = M;
    for (d = found; d >= 0; d--) {
      var t = trace[d], base = d + 1;  // t[k + base] = v[k] before step d
      k = x - y;
      var pk = (k === -d || (k !== d && t[k - 1 + base] < t[k + 1 + base])) ? k + 1 : k - 1;
      var px, py;
      if (d === 0) { px = 0; py = 0; } else { px = t[pk + base]; py = px - pk; }
      while (x > px && y > py) { rev.push([EQ, a0 + x - 1, b0 + y - 1]); x--; y--; }
      if (d > 0) {
        if (x === px) rev.push([ADD, -1, b0 + py]); else rev.push([DEL, a0 + px, -1]);
      }
      x = px; y = py;
    }
    return rev.reverse();
  }
  function intern(items, table) {
    var out = new Array(items.length);
    for (var i = 0; i < items.length; i++) {
      var id = table.get(items[i]);
      if (id === undefined) { id = table.size; table.set(items[i], id); }
      out[i] = id;
    }
    return out;
  }

  // ---- tokens, similarity, word highlights ----
  var TOKEN = /[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?[A-Za-z0-9_]*|[ \t]+|==|!=|<=|>=|\/\/|\*\*|<<|>>|->|&&|\|\||::|[\s\S]/gu;
  var WORD = /^[A-Za-z0-9_]/;
  function tokens(line) { return line.match(TOKEN) || []; }
  // A line's words (identifiers, numbers) as sorted word ids with counts: similarity is then a
  // merge of two short arrays. `ids` maps words to ids for one gap.
  function bag(line, ids) {
    var ts = tokens(line), list = [], i;
    for (i = 0; i < ts.length; i++) {
      if (!WORD.test(ts[i])) continue;
      var id = ids.get(ts[i]);
      if (id === undefined) { id = ids.size; ids.set(ts[i], id); }
      list.push(id);
    }
    list.sort(function (x, y) { return x - y; });
    var w = [], c = [];
    for (i = 0; i < list.length; i++) {
      if (w.length && w[w.length - 1] === list[i]) c[c.length - 1]++;
      else { w.push(list[i]); c.push(1); }
    }
    return { w: w, c: c, n: list.length };
  }
  // 0..1000: twice the words two lines share over the words they have (multisets; Dice).
  function similarity(ba, bb) {
    var na = ba.n, nb = bb.n;
    if (na + nb === 0) return 0;
    if (Math.floor(2000 * Math.min(na, nb) / (na + nb)) < ALIKE) return 0;
    var wa = ba.w, wb = bb.w, ca = ba.c, cb = bb.c, i = 0, j = 0, common = 0;
    while (i < wa.length && j < wb.length) {
      if (wa[i] === wb[j]) { common += ca[i] < cb[j] ? ca[i] : cb[j]; i++; j++; }
      else if (wa[i] < wb[j]) i++;
      else j++;
    }
    return Math.floor(2000 * common / (na + nb));
  }
  // Returns [leftTokens, leftMask, rightTokens, rightMask]; a mask flags the changed tokens.
  function wordDiff(l, r) {
    var lt = tokens(l), rt = tokens(r);
    var lm = new Uint8Array(lt.length), rm = new Uint8Array(rt.length);
    if (lt.length + rt.length > MAX_WORD_TOKENS) { lm.fill(1); rm.fill(1); return [lt, lm, rt, rm]; }
    var table = new Map();
    var ops = myers(intern(lt, table), intern(rt, table));
    for (var i = 0; i < ops.length; i++) {
      if (ops[i][0] === DEL) lm[ops[i][1]] = 1;
      else if (ops[i][0] === ADD) rm[ops[i][2]] = 1;
    }
    return [lt, lm, rt, rm];
  }

  // ---- alignment ----
  function splitLines(text) {
    if (text === undefined || text === null) return null;
    if (!text) return [];
    var lines = text.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    return lines;
  }
  function stripIndent(line) {
    var i = 0, c;
    while (i < line.length && ((c = line.charCodeAt(i)) === 32 || c === 9)) i++;
    return i ? line.slice(i) : line;
  }
  function row(kind, a, b) { return { kind: kind, a: a, b: b }; }

  function align(A, B, noPair) {
    var table = new Map();
    var ka = intern(A.map(stripIndent), table), kb = intern(B.map(stripIndent), table);
    var rows = [], pi = 0, pj = 0, x, i, j;
    var ms = matches(ka, kb);
    for (x = 0; x < ms.length; x++) {
      i = ms[x][0]; j = ms[x][1];
      if (i > pi || j > pj) gap(A, B, range(pi, i), range(pj, j), rows, !noPair);
      rows.push(row(A[i] === B[j] ? "same" : "reindent", i, j));
      pi = i + 1; pj = j + 1;
    }
    if (pi < A.length || pj < B.length) gap(A, B, range(pi, A.length), range(pj, B.length), rows, !noPair);
    return rows;
  }
  function range(lo, hi) { var out = []; for (var i = lo; i < hi; i++) out.push(i); return out; }
  // Matched [i, j] of a longest common subsequence; lines found on one side only are set aside first.
  function matches(ka, kb) {
    var inA = new Set(ka), inB = new Set(kb), ia = [], jb = [], i, out = [];
    for (i = 0; i < ka.length; i++) if (inB.has(ka[i])) ia.push(i);
    for (i = 0; i < kb.length; i++) if (inA.has(kb[i])) jb.push(i);
    var ops = myers(ia.map(function (x) { return ka[x]; }), jb.map(function (x) { return kb[x]; }));
    for (i = 0; i < ops.length; i++) if (ops[i][0] === EQ) out.push([ia[ops[i][1]], jb[ops[i][2]]]);
    return out;
  }
  function gap(A, B, dels, adds, rows, pair) {
    var pairs = pair && dels.length && adds.length ? pairsOf(A, B, dels, adds) : [];
    var di = 0, aj = 0, p, q, x;
    for (x = 0; x < pairs.length; x++) {
      p = pairs[x][0]; q = pairs[x][1];
      while (di < p) { rows.push(row("del", dels[di], null)); di++; }
      while (aj < q) { rows.push(row("add", null, adds[aj])); aj++; }
      rows.push(row("change", dels[p], adds[q]));
      di = p + 1; aj = q + 1;
    }
    for (p = di; p < dels.length; p++) rows.push(row("del", dels[p], null));
    for (q = aj; q < adds.length; q++) rows.push(row("add", null, adds[q]));
  }
  function pairsOf(A, B, dels, adds) {
    var n = dels.length, m = adds.length, p, q, s, out = [];
    var ids = new Map(), ba = new Array(n), bb = new Array(m);
    function sim(p, q) {  // bags made on first use: a huge gap looks at few of its added lines
      return similarity(ba[p] || (ba[p] = bag(A[dels[p]], ids)), bb[q] || (bb[q] = bag(B[adds[q]], ids)));
    }
    if (n * m > PAIR_LIMIT) {
      var q0 = 0;
      for (p = 0; p < n; p++) {
        var hi = Math.min(m, q0 + WINDOW);
        for (q = q0; q < hi; q++) {
          if (sim(p, q) >= ALIKE) { out.push([p, q]); q0 = q + 1; break; }
        }
      }
      return out;
    }
    // Order-preserving pairing with the largest total similarity (a weighted LCS).
    var w = m + 1;
    var dp = new Int32Array((n + 1) * w), sc = new Int32Array(n * m);
    for (p = 1; p <= n; p++) {
      var rw = p * w, prev = (p - 1) * w;
      for (q = 1; q <= m; q++) {
        var best = dp[prev + q];
        if (dp[rw + q - 1] > best) best = dp[rw + q - 1];
        s = sim(p - 1, q - 1);
        sc[(p - 1) * m + q - 1] = s;
        if (s >= ALIKE && dp[prev + q - 1] + s > best) best = dp[prev + q - 1] + s;
        dp[rw + q] = best;
      }
    }
    p = n; q = m;
    while (p > 0 && q > 0) {
      s = sc[(p - 1) * m + q - 1];
      if (s >= ALIKE && dp[p * w + q] === dp[(p - 1) * w + q - 1] + s) { out.push([p - 1, q - 1]); p--; q--; }
      else if (dp[p * w + q] === dp[(p - 1) * w + q]) p--;
      else q--;
    }
    return out.reverse();
  }

  // ---- notes: changes that lines alone do not show ----
  function endsNewline(text) { return !text || text.charAt(text.length - 1) === "\n"; }
  function squeeze(lines) {
    var out = [];
    for (var i = 0; i < lines.length; i++) {
      var s = lines[i].replace(/[ \t\r\f\v]+/g, " ").replace(/^ +| +$/g, "");
      if (s) out.push(s);
    }
    return out;
  }
  function sameList(x, y) {
    if (x.length !== y.length) return false;
    for (var i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  function explain(before, after, A, B, rows) {
    if (before === after) return null;
    if (sameList(A, B)) return endsNewline(before) ? "no newline at end" : "newline added at end";
    var quiet = true;
    for (var i = 0; i < rows.length && quiet; i++) if (rows[i].kind !== "same" && rows[i].kind !== "reindent") quiet = false;
    if (quiet) return "whitespace only (re-indented)";
    if (sameList(squeeze(A), squeeze(B))) return "whitespace only";
    return null;
  }

  var api = {
    align: align, wordDiff: wordDiff, tokens: tokens, splitLines: splitLines, explain: explain,
    myers: myers, intern: intern, ALIKE: ALIKE
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLDiff = api;
})(typeof window !== "undefined" ? window : this);
