"""Where PyTorch's step goes, operator by operator (`torch.profiler`): the twin
`step_time.py` (cifar10) or `gpt_step_time.py` (`--workload gpt|llama`) times, for reading
beside `profile_step.py`'s topos kernels.

    python -m benchmarks.torch_profile [--steps 10] [--channels-last] [--threads N] [--top 25]
                                       [--workload cifar10|gpt|llama]

Warms up five steps, then profiles `--steps` (forward, backward and the optimizer's
update) and prints the operators by self CPU time per step (PyTorch's own operators, the
ones that do the work: `mkldnn_convolution`, `convolution_backward`, `addmm`, `bmm`, ...).
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument(
        "--workload",
        choices=("cifar10", "gpt", "llama"),
        default="cifar10",
        help="whose PyTorch twin: cifar10's (step_time.py) or a language model's "
        "(gpt_step_time.py)",
    )
    arguments = parser.parse_args()

    import torch

    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    step = _twin_step(arguments.workload, arguments.channels_last)
    for _ in range(5):
        step()
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as profile:
        for _ in range(arguments.steps):
            step()
    events = profile.key_averages()
    total = sum(event.self_cpu_time_total for event in events) / 1000 / arguments.steps
    layout = ""
    if arguments.workload == "cifar10":
        layout = ", channels_last" if arguments.channels_last else ", NCHW"
    print(
        f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{arguments.workload}{layout}: "
        f"{total:.2f} ms self CPU a step over {arguments.steps} steps"
    )
    print(" self ms  calls  operator")
    rows = sorted(events, key=lambda event: -event.self_cpu_time_total)[: arguments.top]
    for event in rows:
        print(
            f"{event.self_cpu_time_total / 1000 / arguments.steps:8.2f} "
            f"{event.count // arguments.steps:6d}  {event.key}"
        )


def _twin_step(workload: str, channels_last: bool):
    """The PyTorch twin's step function of `workload`, as its step-time benchmark times it."""
    if workload == "cifar10":
        from benchmarks.step_time import _torch_worker

        return _torch_worker(channels_last=channels_last)
    if channels_last:
        raise SystemExit("torch_profile: --channels-last is for cifar10's convolutions only")
    import os

    from benchmarks import gpt_step_time

    os.environ[gpt_step_time.WORKLOAD_VARIABLE] = workload
    return gpt_step_time._torch_worker()


if __name__ == "__main__":
    main()
