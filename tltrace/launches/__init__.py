"""Launch records (`run --launches`): each call of a compiled kernel observed, nothing replaced.

`observer` watches calls of one code object (TileLang's `JITKernel.__call__`): Python 3.12's
`sys.monitoring` on that code object alone, else `sys.setprofile`. `recorder` turns each call
into a launch line of the invocation's log (format/launches.py); history/launches.py reads it.
"""
