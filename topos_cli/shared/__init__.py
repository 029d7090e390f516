"""NumPy-free helpers every side of the command uses: errors and exit statuses, standard
streams and interrupts, units, atomic writes and process memory. Import the modules
directly; this package imports nothing."""
