"""Layouts: each block's layout map as TileLang fixed it (docs/layouts.md).

capture.py reads it off an IR module (the worker, from the snapshot), recorder.py is the
recorder that stores it as the manifest's `layouts`, expr.py evaluates its expressions
(thread, register, offset and bank of an element) within limits, check.py says whether a
recorded entry may be evaluated at all, model.py answers questions about it (threads are
threadIdx.x).
"""
