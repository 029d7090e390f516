"""NumPy-free helpers the library and the `topos` command share: atomic writes, capped
reads of regular files, and a process's memory from /proc. Importing this package loads
nothing else, so the grading parent (which never imports NumPy) uses them too. Import the
modules directly."""
