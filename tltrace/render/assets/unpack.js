/* tltrace compile report: unpacks the page's packed scripts (render/pages.py `packed_script`).
 *
 * The report's script and its late views (profile, layouts, PTX/SASS) are stored deflated and in
 * base64, in a `<script type="text/x-tltrace-z">` element that nothing runs, which halves what
 * every report carries. This small script, inline before them and named by hash in the page's
 * CSP, inflates one (RFC 1951, synchronously: the page starts as it did unpacked) and inserts it as
 * an inline `<script>` right after the script calling it; the CSP names the unpacked text's hash,
 * so the browser runs it and nothing else. `window.tlUnpack()` unpacks the element just before
 * the calling script: the head calls it once for the report's script, and each late view's own
 * two-word `<script>tlUnpack()</script>` does for that view. A cut or corrupt pack throws inside
 * a try: nothing runs and the page's "incomplete" notice stays. `window.tlInflate(base64)` gives
 * the text of a packed data chunk (pages.py `data_chunk`), which core.js reads as the page needs it.
 *
 * `inflate` is pure (no DOM): tests/test_report_js.py checks it under node against Python's zlib.
 */
(function (root) {
  "use strict";

  var LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
  var LEXT = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
  var DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049,
    3073, 4097, 6145, 8193, 12289, 16385, 24577];
  var DEXT = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
  var ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

  // A canonical Huffman code from its code lengths: how many codes of each length, and the
  // symbols in code order (as zlib's puff.c decodes).
  function code(lengths) {
    var count = [], offs = [0, 0], sym = [], i;
    for (i = 0; i < 16; i++) count.push(0);
    for (i = 0; i < lengths.length; i++) count[lengths[i]]++;
    count[0] = 0;
    for (i = 1; i < 15; i++) offs.push(offs[i] + count[i]);
    for (i = 0; i < lengths.length; i++) if (lengths[i]) sym[offs[lengths[i]]++] = i;
    return { count: count, sym: sym };
  }

  // Return the bytes a raw deflate stream (a Uint8Array) holds; throws on a stream that is cut or corrupt.
  // `dict` (bytes, optional): the preset dictionary it was deflated with (zlib's zdict).
  function inflate(src, dict) {
    var start = dict ? dict.length : 0, out = new Uint8Array(start + 4 * src.length + 1024), at = start;
    var pos = 0, buf = 0, cnt = 0;  // cnt bits not yet used in buf, from src[pos - 1] and before
    if (dict) out.set(dict);
    function room(k) {  // the output (dictionary first, then what is inflated) grows by doubling
      if (at + k <= out.length) return;
      var o = new Uint8Array(Math.max(2 * out.length, at + k));
      o.set(out.subarray(0, at));
      out = o;
    }
    function bits(n) {
      while (cnt < n) {
        if (pos >= src.length) throw new Error("inflate: the stream ends early");
        buf |= src[pos++] << cnt;
        cnt += 8;
      }
      var v = buf & ((1 << n) - 1);
      buf >>>= n; cnt -= n;
      return v;
    }
    function decode(h) {
      var c = 0, first = 0, index = 0;
      for (var len = 1; len < 16; len++) {
        c |= bits(1);
        var n = h.count[len];
        if (c - n < first) return h.sym[index + (c - first)];
        index += n; first = (first + n) << 1; c <<= 1;
      }
      throw new Error("inflate: a bad code");
    }
    var last = 0, lit, dist, i, n;
    while (!last) {
      last = bits(1);
      var type = bits(2);
      if (type === 0) {  // stored: whole bytes after the block's header
        buf = 0; cnt = 0;  // the rest of the byte (fewer than 8 bits are ever held)
        if (pos + 4 > src.length) throw new Error("inflate: the stream ends early");
        n = src[pos] | (src[pos + 1] << 8);
        pos += 4;
        if (pos + n > src.length) throw new Error("inflate: the stream ends early");
        room(n);
        for (i = 0; i < n; i++) out[at++] = src[pos++];
        continue;
      }
      if (type === 1) {
        var l = [];
        for (i = 0; i < 288; i++) l.push(i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8);
        lit = code(l);
        l = [];
        for (i = 0; i < 30; i++) l.push(5);
        dist = code(l);
      } else if (type === 2) {
        var nlen = bits(5) + 257, ndist = bits(5) + 1, ncode = bits(4) + 4, lens = [];
        for (i = 0; i < 19; i++) lens.push(0);
        for (i = 0; i < ncode; i++) lens[ORDER[i]] = bits(3);
        var lencode = code(lens);
        lens = [];
        while (lens.length < nlen + ndist) {
          var s = decode(lencode);
          if (s < 16) { lens.push(s); continue; }
          var rep = 0, times;
          if (s === 16) {
            if (!lens.length) throw new Error("inflate: a repeat with nothing before it");
            rep = lens[lens.length - 1]; times = 3 + bits(2);
          } else times = s === 17 ? 3 + bits(3) : 11 + bits(7);
          while (times--) lens.push(rep);
        }
        lit = code(lens.slice(0, nlen));
        dist = code(lens.slice(nlen, nlen + ndist));
      } else throw new Error("inflate: a bad block type");
      for (;;) {
        var sym = decode(lit);
        if (sym < 256) { room(1); out[at++] = sym; continue; }
        if (sym === 256) break;
        sym -= 257;
        if (sym >= 29) throw new Error("inflate: a bad length");
        var len = LBASE[sym] + bits(LEXT[sym]);
        var d = decode(dist);
        if (d >= 30) throw new Error("inflate: a bad distance");
        var back = DBASE[d] + bits(DEXT[d]);
        if (back > at) throw new Error("inflate: a distance before the start");
        room(len);
        for (i = 0; i < len; i++) { out[at] = out[at - back]; at++; }
      }
    }
    return out.slice(start, at);
  }

  function fromBase64(text) {
    var s = root.atob(text.replace(/\s+/g, "")), b = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  }

  // The text a packed data chunk holds (render/pages.py `data_chunk`): core.js's chunkText reads the
  // chunks through it, when a view first needs them. Throws on a pack that is cut or corrupt.
  // `dict`: a chained chunk's dictionary, the UTF-8 bytes of the chained chunks before it.
  function inflateText(b64, dict) {
    return new root.TextDecoder("utf-8", { fatal: true }).decode(inflate(fromBase64(b64), dict));
  }

  // Unpack the packed element just before the running script and run it (see the top).
  function unpack() {
    var me = root.document.currentScript, pack = me && me.previousElementSibling;
    if (!pack || pack.type !== "text/x-tltrace-z") return;
    var text;
    try { text = new root.TextDecoder("utf-8", { fatal: true }).decode(inflate(fromBase64(pack.textContent))); } catch (e) { return; }
    var s = root.document.createElement("script");
    s.textContent = text;
    me.parentNode.insertBefore(s, me.nextSibling);
  }

  if (typeof module === "object" && module.exports) module.exports = { inflate: inflate };
  else { root.tlUnpack = unpack; root.tlInflate = inflateText; unpack(); }
})(typeof window !== "undefined" ? window : this);
