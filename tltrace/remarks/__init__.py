"""Remarks (`tltrace run --remarks`): what TileLang's native passes write to stderr, kept per pass.

Both halves live here: the in-compile half is the recorder (`recorder.RemarksRecorder`: fd 2
tapped around each top-level pass; the verbose planners' pass configs through the recorder
interface's `pass_configs`), registered by tracing/recorders.py; the reader's half is
`recorder.kinds_of` (facts/ counts remarks by kind) and the manifest's `remarks` field.
"""
