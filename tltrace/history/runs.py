"""Past runs on disk, by one name: the history package's reading API in one namespace.

The work is split by job; this module only gathers their names (`from ..history import
runs`, then `runs.load_run(...)`):

- `loading`: one run directory: its manifest, its status, whether its writer lives;
- `invocations`: a script's runs grouped into invocations, ordered by absolute time;
- `resolve`: the one resolver of SCRIPT_OR_DIR / RUN / COMPILE arguments;
- `texts`: the IR texts a record names, read inside the trace dir only.

Everything here reads; nothing writes.
"""

from __future__ import annotations

from ..errors import RecordsError as RecordsError
from ..errors import UsageError as UsageError
from ..format.texts import generated_text as generated_text
from ..format.texts import object_path as object_path
from ..format.texts import record_path as record_path
from ..format.texts import text_of as text_of
from .invocations import RecordedInvocation as RecordedInvocation
from .invocations import empty_invocations as empty_invocations
from .invocations import group_invocations as group_invocations
from .invocations import invocation_key as invocation_key
from .invocations import invocations as invocations
from .invocations import label as label
from .loading import DAMAGED as DAMAGED
from .loading import INTERRUPTED as INTERRUPTED
from .loading import Run as Run
from .loading import format_time as format_time
from .loading import is_active as is_active
from .loading import is_run_dir as is_run_dir
from .loading import is_script_dir as is_script_dir
from .loading import load_manifest as load_manifest
from .loading import load_run as load_run
from .loading import run_dirs as run_dirs
from .loading import run_id_time as run_id_time
from .loading import safe_time as safe_time
from .loading import start_of as start_of
from .loading import writer_may_live as writer_may_live
from .resolve import Location as Location
from .resolve import Selection as Selection
from .resolve import list_runs as list_runs
from .resolve import locate as locate
from .resolve import looks_like_run_spec as looks_like_run_spec
from .resolve import no_compile_line as no_compile_line
from .resolve import open_selection as open_selection
from .resolve import parse_ref as parse_ref
from .resolve import parse_run_ref as parse_run_ref
from .resolve import resolve_run as resolve_run
from .resolve import script_words as script_words
from .resolve import select as select
from .resolve import skipped_links as skipped_links
from .resolve import split_target as split_target
from .texts import find_record as find_record
from .texts import missing_files as missing_files
from .texts import read_text as read_text
