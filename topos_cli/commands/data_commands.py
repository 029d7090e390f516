"""`topos data`: fetch the real datasets, and say what a data directory holds."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from topos_cli.shared.errors import ToposError, ToposUsageError
from topos_cli.shared.exit_status import ExitStatus

data_application = typer.Typer(
    help="Fetch the real datasets, and say what a data directory holds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: The datasets `topos data info` knows, and those `topos data fetch` can download.
DATASETS = ("cifar10", "mnist", "text")
FETCHABLE = ("cifar10", "mnist")


class FetchInterruptedError(ToposError):
    """A fetch interrupted by Ctrl-C or SIGTERM: nothing half-written is left. Exit 130."""

    exit_status = ExitStatus.INTERRUPTED


@data_application.command("fetch")
def data_fetch(
    name: Annotated[str, typer.Argument(help="cifar10 or mnist.", show_default=False)],
    to: Annotated[
        str, typer.Option("--to", help="The folder to create (it must not hold anything).")
    ],
    url: Annotated[
        str | None,
        typer.Option("--url", help="The folder URL to download from; default the canonical one."),
    ] = None,
    file_format: Annotated[
        str | None,
        typer.Option("--format", help="cifar10 only: bin (the default) or py."),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds the whole fetch may take, however slowly the server sends "
            "(raise it on a slow link).",
        ),
    ] = 3600.0,
) -> None:
    """Download a dataset's canonical files into a new folder.

    Each file's size and MD5 are checked and archives are unpacked; it is all or
    nothing, so a failure, Ctrl-C or SIGTERM leaves no half-written folder.

    Example: topos data fetch cifar10 --to data/cifar10
    """
    if name not in FETCHABLE:
        raise ToposUsageError(f"unknown dataset {name!r}; fetch {' or '.join(FETCHABLE)}")
    if name == "mnist" and file_format is not None:
        raise ToposUsageError(
            "--format applies to cifar10; mnist comes in one format (gzipped IDX)"
        )
    if file_format not in (None, "bin", "py"):
        raise ToposUsageError(f"--format {file_format!r}: choose bin or py")
    source = "cifar10-python" if file_format == "py" else name

    from topos.datasets import DataError, fetch
    from topos.datasets.fetch import MAXIMUM_TIMEOUT_SECONDS
    from topos_cli.commands.download_progress import download_progress
    from topos_cli.shared.interruption import interruptions_raised

    if not 0 < timeout <= MAXIMUM_TIMEOUT_SECONDS:  # also refuses nan
        raise ToposUsageError(
            f"--timeout must be a number of seconds above 0 and at most "
            f"{MAXIMUM_TIMEOUT_SECONDS:g}, not {timeout:g}"
        )
    try:
        # SIGTERM raises as Ctrl-C does, so fetch removes its staging folder either way.
        with interruptions_raised(), download_progress(sys.stderr) as progress:
            target = fetch(source, to, url=url, progress=progress, timeout=timeout)
    except DataError as error:
        raise ToposUsageError(str(error)) from None
    except KeyboardInterrupt:
        # fetch removes its staging folder on the way out; nothing half-written is left.
        raise FetchInterruptedError(f"interrupted; {to} was not created") from None
    typer.echo(
        f"fetched {name} into {target}; grade with: topos grade --workload {name} --data {target}"
    )


@data_application.command("info")
def data_info(
    directory: Annotated[
        str | None,
        typer.Argument(
            help="A folder of dataset files (or a text file); omit for the synthetic stand-in."
        ),
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset", help="cifar10, mnist or text; default: whatever DIRECTORY holds."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the facts as JSON.")] = False,
) -> None:
    """Say what a dataset holds, and its fingerprint.

    Format, split sizes, image shape, class counts and fingerprints (the
    fingerprint a grade records); for a text, its vocabulary and characters.

    Example: topos data info data/cifar10
    """
    if dataset is not None and dataset not in DATASETS:
        raise ToposUsageError(f"unknown dataset {dataset!r}; choose {', '.join(DATASETS)}")

    from topos.datasets import DataError, identify, load

    try:
        # Without a directory the synthetic stand-in of the named (or first) dataset.
        name = dataset or (DATASETS[0] if directory is None else identify(directory))
        description = load(name, directory).describe()
    except (DataError, ValueError) as error:
        raise ToposUsageError(str(error)) from None
    if as_json:
        import json

        typer.echo(json.dumps(description, indent=2))
        return
    for line in describe_dataset(description):
        typer.echo(line)


def describe_dataset(description: dict) -> list[str]:
    """`Dataset.describe()` as lines for people."""
    source = description["source"]
    lines = [
        f"dataset: {description['name']}",
        "source: synthetic stand-in (no files)"
        if source == "synthetic"
        else f"source: {source} ({description['format']})",
        f"fingerprint: {description['fingerprint']}",
    ]
    if "vocabulary" in description:
        vocabulary = description["vocabulary"]
        lines.append(f"vocabulary: {len(vocabulary)} characters {vocabulary!r}")
        from topos.workloads.gpt import vocabulary_warning

        warning = vocabulary_warning(len(vocabulary))
        if warning is not None:
            lines.append(warning)
        for split, facts in description["splits"].items():
            lines.append(
                f"{split}: {facts['characters']} characters; "
                f"fingerprint {facts['fingerprint'][:16]}"
            )
        return lines
    for split, facts in description["splits"].items():
        shape = "x".join(str(extent) for extent in facts["image_shape"])
        counts = facts["class_counts"]
        even = len(set(counts)) == 1
        spread = f"{counts[0]} per class" if even else "per class " + " ".join(map(str, counts))
        lines.append(
            f"{split}: {facts['images']} images of {shape}, {len(counts)} classes, {spread}; "
            f"fingerprint {facts['fingerprint'][:16]}"
        )
    return lines
