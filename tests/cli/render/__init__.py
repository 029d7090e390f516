"""Rendering results: tables, the report, figures, pictures and exports."""
