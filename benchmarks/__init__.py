"""The benchmark suite: what measures topos's speed and memory (the tests never run it).

Every benchmark is a module of this package, run from the repository's root:

    python -m benchmarks.step_time --help

`catalogue` names each one's kind (`python -m benchmarks.catalogue` lists them), and
`benchmark_report` is the one JSON they write (a versioned envelope around the figures).
"""
