"""Train the `gpt` character transformer, report its validation loss, and sample text.

Run with: `python examples/gpt.py` (TOPOS_STEPS, default 300; TOPOS_DATA names a UTF-8
text file or a folder holding input.txt; TOPOS_ROUTE engine or recorded, default
recorded; TOPOS_SAMPLE, the characters to sample, default 300).

It trains exactly what `topos grade --workload gpt` trains (the workload's Training:
its batches, two shards, AdamW), then moves the trained parameters by name onto
forward-only probe plans: one over the validation text's windows for the loss, one
over a single window to sample from, character by character.
"""

import math
import os
import time

from topos.training import Training
from topos.workloads import resolve
from topos.workloads.gpt_probe import GPTProbe


def main() -> None:
    """Trains, evaluates and samples; prints what it did."""
    steps = int(os.environ.get("TOPOS_STEPS", "300"))
    route = os.environ.get("TOPOS_ROUTE", "recorded")
    length = int(os.environ.get("TOPOS_SAMPLE", "300"))
    workload = resolve("gpt")
    dataset = workload.dataset(os.environ.get("TOPOS_DATA"))
    vocabulary = dataset.vocabulary
    uniform = math.log(len(vocabulary))
    print(
        f"gpt: {dataset.source} text ({dataset.format}), {len(dataset.train)} training and "
        f"{len(dataset.test)} validation characters, vocabulary of {len(vocabulary)} "
        f"(uniform loss ln V = {uniform:.3f}); {steps} steps on the {route} route"
    )
    training = Training(workload, route, dataset, steps)
    validation = GPTProbe(len(vocabulary), 32)
    for line in validation.loss_plan.summary():
        print(f"probe {line}")
    started = time.perf_counter()
    for step in range(steps):
        loss = training.step(step)
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step}: loss {loss:.4f}")
    elapsed = time.perf_counter() - started
    print(f"trained {steps} steps in {elapsed:.1f}s ({elapsed * 1000 / steps:.1f} ms/step)")

    trained = training.parameters.named()
    loss = validation.validation_loss(trained, dataset.test)
    print(f"validation loss {loss:.4f} ({loss / uniform:.2f} of ln V)")

    sampler = GPTProbe(len(vocabulary), 1)
    prompt = dataset.test.ids[:32]
    sampled = sampler.sample(trained, prompt, length)
    characters = list(vocabulary)
    print("prompt: " + "".join(characters[i] for i in prompt))
    print("sample: " + "".join(characters[i] for i in sampled))


if __name__ == "__main__":
    main()
