"""The report: only reads results. Judging (the verdict, statistics, parity, memory,
noise), comparing two results, history, and showing them: tables, HTML and figures."""
