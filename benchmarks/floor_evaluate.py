"""The least a cold `challenge evaluate` process can do, as one process: `bench_evaluate.py` times it beside
bare `docker run` and the real command, to show how far any cold process is from bare.

It imports what every evaluation needs before its first container (docker-py with the runner's engine, the
tree's phase and submission models), reads and validates the phase and the submission files, then runs the
algorithm and the evaluation through the runner's own engine (`DockerEngine.run`, with the sandbox's
options) and waits until both containers are removed, as `docker run --rm` does.

Left out, each of which `challenge evaluate` must do: /output as a size-limited tmpfs (its keeper
container), finding pending submissions, checking the images, reading the outputs back, writing, signing
and sealing the result, the progress display. So a cold `challenge evaluate` cannot come closer to bare
than this process does.

Run by bench_evaluate.py: floor_evaluate.py PHASE.yml SUBMISSION.yml EVALUATION_IMAGE INPUTS OUTPUT SCORES
"""

from __future__ import annotations

import sys
from pathlib import Path

from runner.execution.docker_engine import DockerEngine
from runner.execution.sandbox import Mount, RunSpec
from runner.tree.loading import load_phase, load_submission


def main(phase_file: Path, submission_file: Path, evaluation: str, inputs: Path, output: Path, scores: Path) -> None:
    phase = load_phase(phase_file, challenge="bench")
    submission = load_submission(submission_file, challenge="bench", phase=phase.slug, participant="floor",
                                 kind=phase.submission_kind)
    with DockerEngine() as engine:  # closing it waits for both containers' removal
        for spec in (RunSpec(image=submission.image or "", memory=phase.algorithm.memory,
                             mounts=(Mount(inputs, phase.algorithm_input_path), Mount(output, "/output", False))),
                     RunSpec(image=evaluation, memory=phase.evaluation.memory,
                             mounts=(Mount(output, "/input"), Mount(scores, "/output", False)))):
            if not engine.run(spec).ok:
                sys.exit(f"{spec.image} failed")


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:3]), sys.argv[3], *map(Path, sys.argv[4:7]))
