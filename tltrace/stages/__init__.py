"""PTX and SASS as codegen stages (tltrace run --ptx, --sass): derived from the recorded CUDA source.

- `ptx`: the kernel.cu line behind each PTX line (`.loc`, inlined_at chains followed out).
- `sass`: the SASS tools (nvdisasm, cuobjdump), the disassembly with one `//## kernel.cu:N`
  line where the CUDA line changes, and the instruction mix per line (spills, LDG, STS, MMA, BAR).
- `maps`: a stage's Python lines, through the CUDA source's map (generated line -> Python line).
- `recorder`: the recorder (session/recorder.py) that builds them on the worker and hands the
  capture its stage records.
"""
