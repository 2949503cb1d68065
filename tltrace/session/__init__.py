"""Capture: everything that runs while a kernel compiles.

tool.py is the TileLang instrumentation tool, feeding capture.py's TraceSession (one
per compile, threads apart) with snapshots (snapshot.py) that worker.py's background
thread prints and records; recorder.py is the interface of the per-compile extras
(reproducer data, source maps: sourcemap_recorder.py) the layer above registers; codegen_call.py wraps a codegen call (reconcile, record);
instrument.py the standalone TVM PassInstrument behind
`tltrace.create_pass_instrument`; records.py the schema-versioned manifest and pass
records; store.py the on-disk `.run_records` layout; invocation.py, signature.py,
writer.py and scripts.py say which invocation, compile, process and script a run
belongs to; runner.py runs the user's script under runpy; events.py is what the core
tells listeners (it prints nothing itself).
"""
