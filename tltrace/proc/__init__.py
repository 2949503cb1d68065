"""Processes tltrace starts or tells the user to start (this `__init__` imports nothing).

- `pychild`: the command line of a Python child that imports nothing from the current
  directory (`python -P -c`).
- `shell`: commands suggested in messages, every word shell-quoted.
"""
