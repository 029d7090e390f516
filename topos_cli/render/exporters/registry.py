"""The exporters a grade offers, keyed by the option that asks for each: the command
writes every one asked for, and the harness checks every one's path before a worker
starts (`GradeOptions.exports` names the same options)."""

from __future__ import annotations

from collections.abc import Mapping

from topos_cli.render.exporters.csv_exporter import CsvExporter
from topos_cli.render.exporters.exporter import Exporter
from topos_cli.render.exporters.github_benchmark_exporter import GithubBenchmarkExporter
from topos_cli.render.exporters.markdown_exporter import MarkdownExporter

#: Every exporter, by its option, in the order they are written.
EXPORTERS: Mapping[str, Exporter] = {
    exporter.option: exporter
    for exporter in (GithubBenchmarkExporter(), CsvExporter(), MarkdownExporter())
}
