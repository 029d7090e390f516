"""The workload preflight: a grade's first look at a user's workload, in a child process.

Before any worker starts, `topos grade` (and `topos frontier`) runs this once for a
workload that is not built in: it loads the dataset, fits the workload, records it
(the engine route: one recording, no chain rule), makes the optimizer and the first
batch's feeds. A mistake in the user's code (`record`, `load_dataset`, `adapt`,
`batches`, `feeds`, `optimizer`) ends it with exit 2 and one line naming the user's file
and line on stderr, so the grade refuses the workload at once rather than failing every
route. Anything else is left for the workers to report as they always have (exit 0).
Either way it prints the workload's own name, which names the grade's result file, and
which code it imported (`CodeFacts`: the workload's module file, topos's), which `grade
--against` maps into the other side's checkout. With `--where` it only resolves the
workload and says those (a built-in's code is topos's own: nothing to record first).
It runs in a child because the grading parent never imports NumPy.

    python -m topos_cli.worker.workload_preflight [--where] WORKLOAD [DATA]
"""

from __future__ import annotations

import json
import sys

from topos_cli import count_own_frames_as_machinery
from topos_cli.shared.exit_status import ExitStatus

#: What a preflight prints before its one line, for the parent to find it.
PREFIX = "topos: error: "


def preflight(
    workload_name: str, data: str | None, where: bool = False
) -> tuple[str | None, str | None]:
    """The workload's own name (`None` if it cannot be loaded), and the one line naming
    the user's mistake if the workload's code raises while it is loaded, fitted,
    recorded, and fed its first batch (`None` otherwise; `where`: only loaded); whatever
    it raises, `BaseException` included, but an interrupt a signal in fact caused
    (`signal_witness`)."""
    from topos.system.signal_witness import witnessed_signals
    from topos.training import Training
    from topos.workloads import resolve
    from topos.workloads.registry import MissingFrameworkError
    from topos.workloads.user_code_error import user_code_error

    count_own_frames_as_machinery()
    name = None
    with witnessed_signals() as signalled:
        try:
            workload = resolve(workload_name)
            name = workload.name
            if where or "engine" not in workload.routes:
                return name, None  # a native workload: its routes are its own, for its workers
            training = Training(workload, "engine", workload.dataset(data), 1)
            training.feeds(0)
        except MissingFrameworkError as error:
            # Its framework is missing (the module's own import of it failed): no worker
            # could run a route of it, whatever the routes.
            return name, str(error)
        except SystemExit as error:
            return name, user_code_error(error)
        except KeyboardInterrupt as error:
            if signalled():
                raise  # sent: the preflight ends of it
            # The workload's code raised it, no signal sent: its mistake like any other.
            return name, user_code_error(error)
        except BaseException as error:  # the user's, or left for the workers to report
            return name, user_code_error(error)
    return name, None


def native_facts(workload_name: str) -> dict[str, object]:
    """For a native workload (a PyTorch step), what the parent checks `--routes` against:
    its framework, its routes and its default routes; else nothing. The workload's module
    is imported already (the preflight resolved it), so this costs nothing more."""
    from topos.workloads import resolve

    try:
        workload = resolve(workload_name)
    except BaseException:  # the preflight has said what it could
        return {}
    framework = getattr(workload, "framework", None)
    if not framework:
        return {}
    return {
        "framework": framework,
        "routes": list(workload.offered_routes),
        "default_routes": list(workload.default_routes),
        "frontier_references": list(getattr(workload, "frontier_references", ())),
    }


def main(argv: list[str] | None = None) -> int:
    """Runs the preflight: the workload's name as JSON on stdout, then exit 2 with the
    one line on stderr on a user code error, else 0."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    where = arguments[:1] == ["--where"]
    arguments = arguments[where:]
    name, mistake = preflight(arguments[0], arguments[1] if len(arguments) > 1 else None, where)
    told: dict[str, object] = {"name": name}
    if name is not None:
        from topos_cli.worker.code_origin import code_facts

        told["code"] = code_facts(arguments[0]).to_json()
        told.update(native_facts(arguments[0]))
    sys.stdout.write(json.dumps(told) + "\n")
    if mistake is None:
        return ExitStatus.OK
    sys.stderr.write(f"{PREFIX}{mistake}\n")
    return ExitStatus.USAGE


if __name__ == "__main__":
    sys.exit(main())
