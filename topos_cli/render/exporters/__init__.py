"""Every file a grade exports, behind one interface (hyperfine's idea): one result it is
made from (`ExportedGrade`), one `Exporter` a format, one file a format (`csv_exporter`,
`markdown_exporter`, `github_benchmark_exporter`), one registry the commands read
(`EXPORTERS`, keyed by the option that asks for each), one writer (`write_export`), and
one Markdown table writer (`markdown_table`) for every renderer that writes Markdown."""

from topos_cli.render.exporters.export_file import write_export
from topos_cli.render.exporters.exported_grade import ExportedGrade
from topos_cli.render.exporters.exporter import Exporter
from topos_cli.render.exporters.registry import EXPORTERS

__all__ = ["EXPORTERS", "ExportedGrade", "Exporter", "write_export"]
