"""Source maps: the Python line behind each line of a recorded text, made while the kernel compiles.

The compile-time half lives here: `lines` (the line tags printed into the IR and stripped,
the codegen's map, TileLang's own `#line` directives), `recorder` (source maps as a recorder:
the printer of every snapshot, the second codegen on the worker), `store` (sourcemap.jsonl and
the working file's `.map`), `line_directives` (`run --line-directives`: the device source handed
back with scoped `#line` directives, through the recorder interface's `handback`) and `cstring`
(the C string escaper of the `#line` file names). The codec is format/sourcemap.py's; the
readers are history/sourcemaps.py and render/sourcemap.py.
"""
