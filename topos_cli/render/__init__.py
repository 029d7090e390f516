"""What people see of a result: terminal tables, the verdict's report in HTML, figures,
history pages and the exports (JSON, CSV, Markdown, GitHub's benchmark format). It only
reads what `judge` decided; nothing here judges. Nothing here imports the library;
matplotlib (and with it NumPy) loads only where a figure is drawn. Import the submodules
directly.
"""
