"""Files, the primitives every read and write of tltrace goes through (this `__init__` imports nothing).

- `atomic`: atomic file replacement and file locks.
- `safe_read`: reads that never block on a FIFO or follow a link.
- `output_path`: the one rule for every output PATH a command writes (`-`, a new file,
  tltrace's own output rewritten, anything else refused).
"""
