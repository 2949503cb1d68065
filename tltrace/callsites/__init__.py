"""Call sites: where in the user's script a compile, and a library line, came from.

The compile-time half lives here: `stack` (the user's frames when a compile begins, the
manifest's `stack`; a recorder) and `library` (lines of TileLang's library code, a
`T.gemm`'s, mapped to the user's call of the tile operator; pure, used by source maps and
line directives). The reader's half is history/callsites.py (compiles grouped by call site).
"""
