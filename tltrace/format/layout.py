"""The names of what tltrace leaves on disk, and the rules that make them.

    <trace dir>/
      .tltrace-scripts.json          script identity -> script dir name (format/scripts.py)
      <script>/                      a script dir
        .tltrace-script.json         the identity that owns it (format/scripts.py)
        codegen_device.cpp (+ _host) working files (reconcile/files.py owns them)
        .codegen_kernels.json        kernel variant -> working file (reconcile/registry.py)
        <working file>.map           its source map (format/sourcemap.py)
        .run_records/
          .objects/<hash>            older runs: each distinct text once (`text_hash`), read-only
          .live.<invocation id>      the liveness lock (format/liveness.py; older: .live/<id>)
          launches.<invocation id>.jsonl   run --launches: the invocation's launches (format/launches.py)
          run_<...>/                 one compile (format/ids.py)
            manifest.json            the run's RunManifest (format/records.py)
            records.jsonl            pass records while it runs
            sourcemap.jsonl          its source maps (format/sourcemap.py)
            inflight, fatal.txt      notes of a compile in flight (format/notes.py)
            texts.pack               every distinct text of the run once (format/pack.py)
            (older runs: source_<hash>.py, <phase>/<NN>_<Pass>_<side>.tir, hard links into .objects;
            today `record_file` names what `export --tir` writes)

Writers (session/, reconcile/) and readers (history/, render/, rerun/) both take these
names from here; nothing else spells them.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from .ids import RUN_PREFIX, is_run_name
from .names import safe_component

RUN_RECORDS = ".run_records"  # under a script dir
OBJECTS = ".objects"  # under .run_records
LIVE = ".live"  # under .run_records: `.live.<invocation id>`, the lock file (older writers: `.live/<id>`)
MANIFEST = "manifest.json"  # in a run dir
RECORDS_LOG = "records.jsonl"  # in a run dir, while the compile runs
SOURCEMAP_LOG = "sourcemap.jsonl"  # in a run dir
PACK = "texts.pack"  # in a run dir: every distinct text of the run (format/pack.py)
SOURCE_PREFIX = "source_"  # run-relative name of a copied Python source: source_<hash>.py
INFLIGHT = "inflight"  # in a run dir, while the compile runs
FATAL = "fatal.txt"  # in a run dir: faulthandler's file
LAUNCHES = "launches"  # under .run_records: `launches.<invocation id>.jsonl` (format/launches.py)
TIMEDOUT = "timedout"  # in a run dir: `run --timeout` stopped its compile (tracing/watchdog.py)
SANITIZER = (
    "sanitizer.json"  # in a run dir: `run --sanitize`'s errors named at its lines (format/sanitizer.py)
)
SANITIZER_XML = "sanitizer.xml"  # in the newest run dir of a `run --sanitize`: compute-sanitizer's own report
REPORT = "report.html"  # in a run dir (the compile's report) and a script dir (the invocation index)
NCU_PROFILE = (
    "ncu.json"  # in a run dir: its kernels' launches as `run --ncu` measured them (runtime/profiled.py)
)
NCU_REPORT = "ncu.ncu-rep"  # in a run dir: the Nsight Compute report they were read from
SCRIPTS_REGISTRY = ".tltrace-scripts.json"  # in a trace dir: script identity -> script dir name

# Working files (reconcile/files.py writes them; history/resolve.py recognises a script dir by them).
DEFAULT_STEM = "codegen"  # codegen_device.cpp, codegen_host.cpp
EXT = ".cpp"
KERNEL_REGISTRY = ".codegen_kernels.json"
WORKING_MAP_SUFFIX = ".map"  # <working file>.map

__all__ = [
    "DEFAULT_STEM",
    "EXT",
    "FATAL",
    "INFLIGHT",
    "TIMEDOUT",
    "KERNEL_REGISTRY",
    "LAUNCHES",
    "LIVE",
    "MANIFEST",
    "NCU_PROFILE",
    "NCU_REPORT",
    "OBJECTS",
    "PACK",
    "RECORDS_LOG",
    "REPORT",
    "RUN_PREFIX",
    "RUN_RECORDS",
    "SCRIPTS_REGISTRY",
    "SOURCEMAP_LOG",
    "SOURCE_PREFIX",
    "WORKING_MAP_SUFFIX",
    "is_hash",
    "is_object_name",
    "is_object_temp",
    "is_run_name",
    "record_file",
    "source_file",
    "source_hash",
    "text_hash",
    "utf8_hash",
]


# hashlib gives the GIL away while it hashes 2048 bytes or more; for a text of a few KB the
# hand-back costs far more than the hash (up to a switch interval, 5 ms, when the autotuner's
# other compiling threads want the GIL), so texts are fed in smaller pieces.
_HASH_PIECE = 2000


def text_hash(text: str) -> str:
    """Return the content hash that names stored texts (BLAKE2b, 10 bytes, of the UTF-8 text): 20 hex digits."""
    return utf8_hash(text.encode("utf-8", "surrogatepass"))


def utf8_hash(utf8: bytes) -> str:
    """`text_hash` of the text whose UTF-8 (surrogatepass) is `utf8` (a caller that also stores those bytes
    encodes the text once)."""
    data = memoryview(utf8)
    h = hashlib.blake2b(digest_size=10)
    for i in range(0, len(data), _HASH_PIECE):
        h.update(data[i : i + _HASH_PIECE])
    return h.hexdigest()


_HASH = re.compile(r"^[0-9a-f]{8,128}$")  # a hash a reader accepts (a manifest's before/after hash)
_OBJECT_NAME = re.compile(r"^[0-9a-f]{20}$")  # exactly what text_hash makes
_OBJECT_TMP = re.compile(r"^\.[0-9a-f]{20}\..+\.tmp$")  # a killed writer's temporary (session/store.py)
_SOURCE_FILE = re.compile(r"^source_([0-9a-f]{8,128})\.py$")


def is_hash(text: object) -> bool:
    """Return True for a well-formed hash a record may name (a reader looks it up in .objects)."""
    return isinstance(text, str) and bool(_HASH.match(text))


def is_object_name(name: str) -> bool:
    """Return True for a file name in .objects that the store made (what `clean` may remove)."""
    return bool(_OBJECT_NAME.match(name))


def is_object_temp(name: str) -> bool:
    """Return True for the temporary a killed writer left in .objects (`.<hash>.<pid>-<thread>.tmp`)."""
    return bool(_OBJECT_TMP.match(name))


def source_file(digest: str) -> str:
    """Return the run-relative name of a copied Python source: `source_<hash>.py`."""
    return f"{SOURCE_PREFIX}{digest}.py"


def source_hash(name: object) -> str | None:
    """Return the hash a `source_<hash>.py` name carries, or None for any other name."""
    m = _SOURCE_FILE.match(name) if isinstance(name, str) else None
    return m.group(1) if m else None


@lru_cache(maxsize=4096)
def record_file(phase: str, index: int, name: str, side: str, ext: str = "tir") -> str:
    """Return the run-relative file of one side of a record: `<phase>/<NN>_<name>_<side>.<ext>`."""
    return f"{safe_component(phase)}/{index:02d}_{safe_component(name)}_{side}.{ext}"
