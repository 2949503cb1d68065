import sys
import time

import tilelang
from tilelang.instrumentation import (
    PassEventObserver,
    PassInstrumentationTool,
    StackedPassInstrument,
    register_pass_instrumentation_tool,
)

sys.path.insert(0, sys.argv[1])
from elementwise_add import make_add  # noqa: E402

seen = [0]


class Obs(PassEventObserver):
    def pass_started(self, mod, event):
        if event.depth == 0:
            seen[0] += 1
            if seen[0] == 5:
                print("hanging in", event.sequence, event.name, flush=True)
                while True:
                    time.sleep(0.05)  # HANG-HERE


class Tool(PassInstrumentationTool):
    pass_instrument_priority = 2000  # after tltrace's callbacks: the pass has begun

    def create_pass_instrument(self):
        return StackedPassInstrument(Obs())


register_pass_instrumentation_tool("hang-helper", Tool)
tilelang.compile(make_add(128, 128), target="c", execution_backend="cython")
