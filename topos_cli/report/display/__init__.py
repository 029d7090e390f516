"""What people see of a result: terminal tables, the verdict's report in HTML, figures and
history pages. Nothing here imports the library; matplotlib (and with it NumPy) loads only
where a figure is drawn. Import the submodules directly.
"""
