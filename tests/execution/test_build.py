"""Trusted builds on the real engine: extra folders join the build context, as the evaluation kit does."""

from __future__ import annotations

import pytest

from runner.evaluation.queue import EVALKIT
from runner.execution.baseimage import local_base_tag
from runner.execution.sandbox import RunSpec

pytestmark = pytest.mark.docker

DOCKERFILE = """ARG BASE=python:3.11-slim
FROM ${BASE}
RUN python3 -c "import numpy, scipy" 2>/dev/null || pip install --no-cache-dir numpy scipy nibabel
COPY evalkit /opt/evaluation/evalkit
COPY score.py /opt/evaluation/score.py
ENV PYTHONPATH=/opt/evaluation
ENTRYPOINT ["python3", "/opt/evaluation/score.py"]
"""
SCORE = """import evalkit, numpy as np
truth = np.zeros((8, 8, 8), bool); truth[2:6, 2:6, 2:6] = True
pred = np.zeros_like(truth); pred[2:6, 2:6, 3:7] = True
m = evalkit.segmentation_metrics(truth, pred, (1.0, 1.0, 1.0), tolerance_mm=1.0)
print(f"dsc={m['dsc']:.4f} nibabel={evalkit.images._optional('nibabel') is not None}")
"""


def test_evaluation_image_gets_the_kit_and_runs_it(engine, base_image, tmp_path):
    folder = tmp_path / "evaluation"
    folder.mkdir()
    (folder / "Dockerfile").write_text(DOCKERFILE)
    (folder / "score.py").write_text(SCORE)
    image = engine.build(folder, name="challenge-test/evalkit", base=base_image, extra_context={"evalkit": EVALKIT})
    assert not (folder / "evalkit").exists()  # the organizer's folder is left as it was
    outcome = engine.run(RunSpec(image=image))
    assert outcome.ok, outcome.stderr_tail
    assert outcome.stdout_tail == ["dsc=0.7500 nibabel=True"]  # 48 of 64 voxels overlap: 2*48/128
    again = engine.build(folder, name="challenge-test/evalkit", base=base_image, extra_context={"evalkit": EVALKIT})
    assert again == image  # tagged by content, kit included: built once


def test_without_the_extra_folder_the_copy_fails_with_one_line(engine, base_image, tmp_path):
    from runner.execution.sandbox import SandboxError
    folder = tmp_path / "evaluation"
    folder.mkdir()
    (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nCOPY evalkit /opt/evalkit\n")
    with pytest.raises(SandboxError, match=r"building .* failed: .*evalkit"):
        engine.build(folder, name="challenge-test/no-kit", base=base_image)


def test_the_offline_base_runs_the_kit_without_a_compiler_and_pip_installs(engine, base_image):
    """The offline base keeps what evaluations import and drops what only builds code (gcc, g++,
    boost, headers: half a gigabyte that scipy's pythran dependency pulls in); it has `python` and a pip
    that installs, as the image it stands in for has."""
    offline = [image.id for image in engine.client.images.list(name=local_base_tag())]
    if base_image not in offline:
        pytest.skip(f"the suite runs on {base_image}, not on the offline base")
    check = ("import numpy, scipy.ndimage, scipy.optimize, nibabel, shutil, pip, pathlib, sysconfig; "
             "print([shutil.which(t) for t in ('gcc', 'g++', 'cc')]); print(shutil.which('python')); "
             "print((pathlib.Path(sysconfig.get_path('stdlib')) / 'EXTERNALLY-MANAGED').exists())")
    outcome = engine.run(RunSpec(image=base_image, command=("python3", "-c", check)))
    assert outcome.ok, outcome.stderr_tail
    # What python:3.11-slim has, for Dockerfiles written for it: `python`, and pip allowed to install.
    assert outcome.stdout_tail == ["[None, None, None]", "/usr/bin/python", "False"]
    assert engine.client.images.get(base_image).attrs["Size"] < 600 * 1024**2


def test_a_failed_build_says_which_step_and_why(engine, base_image, tmp_path):
    """The engine's error gives only the exit code; the cause is the step's last line of output."""
    from runner.execution.sandbox import SandboxError
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nRUN echo installing\n"
                                       "RUN echo 'no-such-tool: not found' >&2; exit 127\n")
    with pytest.raises(SandboxError) as caught:
        engine.build(folder, name="challenge-test/broken", base=base_image)
    message = str(caught.value)
    assert message.endswith("failed: step \"RUN echo 'no-such-tool: not found' >&2; exit 127\": no-such-tool: not "
                            "found: The command '/bin/sh -c echo 'no-such-tool: not found' >&2; exit 127' returned "
                            "a non-zero code: 127"), message


def test_build_failure_reads_the_engines_log():
    from runner.execution.docker_engine import build_failure
    log = [{"stream": "Step 1/3 : FROM base\n"}, {"stream": " ---> 1a2b\n"},
           {"stream": "Step 3/3 : RUN python -m pip install -r requirements.txt\n"},
           {"stream": " ---> Running in 3c4d\n"}, {"stream": "\x1b[91m/bin/sh: 1: python: not found\n"},
           {"stream": "\x1b[0m"},
           {"error": "The command '/bin/sh -c python -m pip install -r requirements.txt' "
                     "returned a non-zero code: 127"}]
    assert build_failure(log, "fallback") == (
        "step 'RUN python -m pip install -r requirements.txt': /bin/sh: 1: python: not found: "
        "The command '/bin/sh -c python -m pip install -r requirements.txt' returned a non-zero code: 127")
    assert build_failure([], "the engine said no") == "the engine said no"
