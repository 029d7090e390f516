"""Judging results, apart from showing them: the verdict (parity, speed, memory, noise),
every judgement of time and of counts, comparing two results (`compare`, `--against`),
and history's groups and changes. It produces typed records; `render` only reads them.
Nothing here draws, prints or imports matplotlib. Import the submodules directly.
"""
