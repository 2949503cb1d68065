"""The on-disk format: what tltrace leaves under a trace dir, and the one way to name, write and read it.

The bottom of the house: it imports only config, errors, fs.atomic, fs.safe_read and the
standard library. session/ writes through it; history/, render/, rerun/, reconcile/ and
bisect/ read through it, never through the writing package.

- `ids`: run and invocation ids, their one grammar (`parse_id`) and their makers;
- `layout`: the names of files and directories under a trace dir, `.run_records` and a
  run directory; the content hash that names stored texts; per-pass file names;
- `names`: the one rule that makes a name a safe path component;
- `records`: PassRecord and RunManifest, their JSON codec and its schema version;
- `sourcemap`: LineMap and the codec of `sourcemap.jsonl` and `<working file>.map`;
- `notes`: the notes a compile in flight leaves for a process that dies (`inflight`, `fatal.txt`);
- `writer`: who writes a run (a manifest's `writer`), and whether it still lives;
- `liveness`: the lock `.live.<invocation>` that says an invocation still runs;
- `scripts`: which script dir belongs to which script (`.tltrace-scripts.json`);
- `texts`: the one confined reader of recorded texts (a record's per-pass file inside its run
  directory, else the stored object by hash);
- `passref`: the one pass-name grammar (index, [phase/]NAME[#k], any case), how records
  are named by `--pass` and read back.
"""
