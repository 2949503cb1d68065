"""Capture: everything that runs while a kernel compiles.

tool.py is the TileLang instrumentation tool, feeding capture.py's TraceSession (one
per compile, threads apart) with snapshots (snapshot.py) that worker.py's background
thread prints and records; codegen_call.py wraps a codegen call (the working-file step
through hooks.py, then the record); instrument.py the standalone TVM PassInstrument behind
`tltrace.create_pass_instrument`; records.py the schema-versioned manifest and pass
records; store.py the on-disk `.run_records` layout; signature.py and writer.py say which
compile and process a run belongs to; controller.py sets TileLang up and installs the tool;
events.py is what the core tells listeners (it prints nothing itself). Nothing here imports
the layers above (tracing/, reconcile/, history/, render/): see docs/architecture.md.
"""
