"""Capture: everything that runs while a kernel compiles.

tool.py is the TileLang instrumentation tool, feeding capture.py's TraceSession (one
per compile, threads apart) with snapshots (snapshot.py) that worker.py's background
thread prints and records; recorder.py is the interface of the per-compile extras
that the feature packages above implement (source maps, remarks, facts, ...) and the
layer above registers;
codegen_call.py wraps a codegen call (the working-file step through hooks.py, then the
record); instrument.py the standalone TVM PassInstrument behind
`tltrace.create_pass_instrument`; store.py writes a run's files in
the on-disk format, which is tltrace/format/'s (names, ids, the schema-versioned manifest
and pass records, the source-map codec); signature.py says which compile a run is;
controller.py sets TileLang up and installs the tool; events.py is what the core tells
listeners (it prints nothing itself). Nothing here imports the layers above (tracing/,
reconcile/, history/, render/): see docs/architecture.md.
"""
