"""A PassContext nested in the compile's own, its config updated: how tltrace sets pass configs through the seam.

The tracing tool (session/tool.py) sets the recorders' `pass_configs` this way around each
backend pipeline and codegen call (`run --remarks=vectorize,...`: TileLang's verbose
planners), and `bisect --configs`' seam tool (bisect/skipping.py) its flips. The nested context keeps the compile's opt level, required and disabled
passes and config, and gets fresh instruments of the same compile session (as TileLang's
nested helpers make them), so its passes are traced as the compile's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def configs_applied(configs: dict[str, Any], context: str) -> Iterator[None]:
    """Run the body in a PassContext nested in the current one, its config updated by `configs`."""
    from tilelang.instrumentation import create_pass_instruments  # type: ignore[import-not-found]
    from tvm.ir.transform import PassContext  # type: ignore[import-not-found]

    cur = PassContext.current()
    config = {str(k): v for k, v in cur.config.items()}
    config.update(configs)
    ctx = PassContext(
        opt_level=int(cur.opt_level),
        config=config,
        required_pass=[str(p) for p in cur.required_pass],
        disabled_pass=[str(p) for p in cur.disabled_pass],
        instruments=create_pass_instruments(context=context),
    )
    with ctx:
        yield
