"""`challenge try`: a participant's submission run as the runner runs it, on public sample data, with
nothing written into results/. Real-engine tests prove the sandbox, limits and evaluation are the
runner's; fake-executor tests cover the ways a submission, a phase and the data can be named."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from runner.cli import main
from runner.evaluation.job import GROUND_TRUTH
from runner.execution.images import image_tag
from runner.tree.store import Store
from tests.evaluation.test_challenges_examples import CHALLENGES, examples_of
from tests.fake_executor import FAKE_BASE, Behaviour, FakeExecutor
from tests.helpers import CHALLENGE, IMAGES, PHASE, edit_yaml, phase_file, write_submission

CASES = ("case-000.npy", "case-001.npy", "case-002.npy")


def run_try(repo: Path, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["--root", str(repo), "try", *args])
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def results(repo: Path) -> list[Path]:
    return sorted((repo / "challenges").glob("*/results/**/*.json"))


@pytest.fixture
def sample(data_root) -> Path:
    """The example challenge's data, as a participant's own --data folder."""
    return data_root / CHALLENGE / PHASE


# --- on the real engine ---------------------------------------------------------------------------

docker = pytest.mark.docker


@docker
def test_a_submission_file_runs_as_the_runner_would_and_writes_nothing(repo, capsys, engine, base_image, sample):
    image = engine.build(repo / "challenges" / CHALLENGE / "examples" / "baseline",
                         name="challenge-test/try-baseline", base=base_image)
    path = write_submission(repo, "alice", "v1", image)
    before = results(repo)
    code, printed, err = run_try(repo, capsys, str(path), "--data", str(sample), "--base-image", base_image)
    assert code == 0, printed + err
    header = next(line for line in printed.splitlines() if "Dice (mean)" in line)
    assert "Jaccard (mean)" in header and "Dice (worst case)" in header  # the phase's columns
    assert "nothing was written to results/" in printed and "algorithm: " in printed
    assert results(repo) == before
    assert [s.key for s in Store(repo).pending()] == [f"{CHALLENGE}/{PHASE}/alice/v1"]  # still pending
    assert not any((repo / "build" / "try").glob("run-*"))  # the scratch folder is gone


@docker
def test_a_crash_fails_with_its_reason_and_the_log(repo, capsys, behave, base_image, sample):
    behave("crash")  # built, and tagged by its content: a participant names a local tag
    tag = image_tag(IMAGES / "behave", name="challenge-test/behave-crash", base=base_image, args={"MODE": "crash"})
    code, printed, _ = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", tag, "--data", str(sample),
                               "--base-image", base_image)
    assert code == 1
    assert "failed: Algorithm failed: RuntimeError: model weights not found at /opt/model.pt" in printed
    assert "debug detail that is not the reason" in printed  # the log is the participant's own, here
    assert results(repo) == []


@docker
def test_the_phases_limits_apply(repo, capsys, behave, base_image, sample):
    edit_yaml(phase_file(repo), algorithm_time_limit=2)
    code, printed, _ = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", behave("sleep"), "--data",
                               str(sample), "--base-image", base_image)
    assert code == 1 and "failed: Algorithm failed:" in printed and "2 s" in printed


# Each example challenge's phase and the example tried there, as the participants' guide writes the command.
GUIDE = {
    "abdominal-organs": ("test", "raw-intensity"),
    "ellipsoid-segmentation": ("final-test", "baseline"),
    "few-shot-classification": ("final", "prototypes"),
    "lesion-training": ("final", "logistic"),
    "lung-cancer-prediction": ("stage1", "nodule-size"),  # predictions its predict.py makes of the sample
    "lung-nodule-detection": ("cross-validation", "cnn-3d"),  # self-reported: no inputs
}


def test_every_example_challenge_is_tried():
    assert sorted(GUIDE) == sorted(p.parent.parent.name for p in CHALLENGES.glob("*/data/make_data.py"))


@docker
@pytest.mark.parametrize("slug", sorted(GUIDE))
def test_the_guides_command_runs_each_example_challenges_example(repo, capsys, engine, base_image, tmp_path, slug):
    """`challenge try --phase C/PHASE IMAGE|FILE` on the sample the challenge's data script writes."""
    phase, name = GUIDE[slug]
    folder = examples_of(slug)[name]
    if (folder / "Dockerfile").is_file():  # docker build -t <tag> . ; challenge try --phase C/PHASE <tag>
        engine.build(folder, name=f"challenge-example/{slug}-{name}", base=base_image)
        args = [image_tag(folder, name=f"challenge-example/{slug}-{name}", base=base_image)]
    elif slug == "lung-cancer-prediction":  # the predictions file of the sample's inputs, tried on that sample
        sample = tmp_path / "sample"
        subprocess.run([sys.executable, str(CHALLENGES / slug / "data" / "make_data.py"), "--sample", str(sample)],
                       check=True, capture_output=True)
        made = subprocess.run([sys.executable, str(folder / "predict.py"), str(sample / "inputs")], check=True,
                              capture_output=True, text=True)
        (tmp_path / "predictions.csv").write_text(made.stdout)
        args = ["--data", str(sample), str(tmp_path / "predictions.csv")]
    else:  # a self-reported metrics file, checked against the public protocol
        args = [str(folder / "metrics.json")]
    code, printed, err = run_try(repo, capsys, "--phase", f"{slug}/{phase}", *args)
    assert code == 0, printed + err
    assert "nothing was written to results/" in printed and "unranked" not in printed, printed
    assert results(repo) == []


# --- on the fake executor -------------------------------------------------------------------------


def threshold(inputs: Mapping[str, Path], output: Path) -> None:
    for path in sorted(inputs["/input"].iterdir()):
        (output / path.name).write_bytes(path.read_bytes())


def score(inputs: Mapping[str, Path], output: Path) -> None:
    """Dice 1 for each ground-truth case with a prediction, 0 without."""
    truth = sorted(p.name for p in inputs[GROUND_TRUTH].iterdir())
    cases = {name: {"dice": float((inputs["/input"] / name).is_file())} for name in truth}
    mean = sum(c["dice"] for c in cases.values()) / len(cases)
    metrics = {"case": cases, "aggregates": {"dice": {"mean": mean, "std": 0.0, "min": mean},
                                             "jaccard": {"mean": mean, "std": 0.0}}}
    (output / "metrics.json").write_text(json.dumps(metrics))


@pytest.fixture
def fake(monkeypatch) -> FakeExecutor:
    executor = FakeExecutor()
    executor.add_image(f"challenge-eval/{CHALLENGE}", Behaviour(write=score))
    executor.add_image("my-algorithm:latest", Behaviour(write=threshold))
    monkeypatch.setattr("runner.cli.tryout.runner_executor", lambda settings, root, gpus, log: (executor, FAKE_BASE))
    return executor


@pytest.fixture
def own_data(tmp_path) -> Path:
    for part in ("inputs", "ground-truth"):
        (tmp_path / "own" / part).mkdir(parents=True)
        for name in CASES:
            (tmp_path / "own" / part / name).write_bytes(b"x")
    return tmp_path / "own"


def test_a_local_tag_runs_as_its_image_id(repo, capsys, fake, own_data):
    code, printed, _ = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", "my-algorithm:latest",
                               "--data", str(own_data))
    assert code == 0 and "1.000 ± 0.000" in printed
    assert fake.runs[0].image == fake.images["my-algorithm:latest"]
    assert fake.runs[0].time_limit == 120 and fake.runs[0].memory == 1024**3  # the phase's limits
    assert results(repo) == []


def test_a_submission_file_outside_the_tree_names_its_phase(repo, capsys, fake, own_data, tmp_path):
    elsewhere = tmp_path / "mine.yml"
    elsewhere.write_text(f"phase: {PHASE}\nimage: {fake.images['my-algorithm:latest']}\ntitle: Mine\n")
    code, printed, err = run_try(repo, capsys, str(elsewhere), "--data", str(own_data))
    assert code == 1 and "a submission must sit at challenges/<challenge>/submissions/" in err
    code, printed, _ = run_try(repo, capsys, str(elsewhere), "--phase", f"{CHALLENGE}/{PHASE}", "--data",
                               str(own_data))
    assert code == 0 and "Dice (mean)" in printed


def test_a_predictions_file_is_pinned_and_scored(repo, capsys, fake, own_data, tmp_path):
    phase = phase_file(repo)
    edit_yaml(phase, submission_kind="predictions")
    zipped = tmp_path / "masks.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for name in CASES[:2]:
            archive.writestr(name, b"mask")
    code, printed, _ = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", str(zipped), "--data", str(own_data))
    assert code == 0 and "0.667 ± 0.000" in printed  # two of three cases
    assert [run.image for run in fake.runs] == [fake.images[f"challenge-eval/{CHALLENGE}"]]  # no algorithm ran


def test_sample_data_comes_from_the_challenges_script_once(repo, capsys, fake):
    script = repo / "challenges" / CHALLENGE / "data" / "make_data.py"
    script.write_text("import sys\nfrom pathlib import Path\nassert sys.argv[1] == '--sample'\n"
                      "for part in ('inputs', 'ground-truth'):\n"
                      "    (Path(sys.argv[2]) / part).mkdir(parents=True)\n"
                      "    (Path(sys.argv[2]) / part / 'case-000.npy').write_bytes(b'x')\n")
    errs = []
    for _ in range(2):
        code, printed, err = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", "my-algorithm:latest")
        assert code == 0 and "1.000" in printed
        errs.append(err)
    assert "writing sample data" in errs[0] and "writing sample data" not in errs[1]  # made once, then kept
    assert (repo / "build" / "try" / "sample" / CHALLENGE / "inputs" / "case-000.npy").is_file()


def test_a_committed_sample_is_used_first(repo, capsys, fake, own_data):
    shutil.copytree(own_data, repo / "challenges" / CHALLENGE / "data" / "sample")
    code, _, err = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", "my-algorithm:latest")
    assert code == 0 and f"challenges/{CHALLENGE}/data/sample" in err


@pytest.mark.parametrize("args, message", [
    (["my-algorithm:latest"], "my-algorithm:latest: not a submission file; name the phase for an image or a "
                              "predictions file: challenge try --phase CHALLENGE/PHASE ..."),
    (["--phase", "nope", "x"], "--phase 'nope': write CHALLENGE/PHASE"),
    (["--phase", "nope/final-test", "x"], "--phase 'nope/final-test': there is no challenge 'nope'"),
    (["--phase", f"{CHALLENGE}/{PHASE}", "missing:tag"], "missing:tag: image missing:tag is not on this runner "
                                                          "(build it first, or give a pinned reference)"),
    (["--phase", f"{CHALLENGE}/{PHASE}", "my-algorithm:latest", "--data", "/nonexistent"],
     "/nonexistent/inputs is not a folder: sample data holds inputs/ and ground-truth/"),
])
def test_what_cannot_be_tried_is_one_line(repo, capsys, fake, args, message):
    code, _, err = run_try(repo, capsys, *args)
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"error: {message}"), err


def test_without_sample_data_or_a_script_that_writes_it(repo, capsys, fake):
    (repo / "challenges" / CHALLENGE / "data" / "make_data.py").unlink()
    code, _, err = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", "my-algorithm:latest")
    assert code == 1 and f"error: challenge '{CHALLENGE}' has no sample data" in err and "--data DIR" in err


def test_what_a_container_printed_reaches_the_terminal_as_text(repo, capsys, fake, own_data):
    """A failing container's last line and log may hold rich markup and terminal escapes: shown as text,
    never read as markup (an unbalanced '[/]' once ended in a traceback) or sent to the terminal raw."""
    fake.add_image("hostile:latest", Behaviour(exit_code=1, stderr="\x1b]0;PWNED\x07\x1b[2J\n[/] [link=https://x.example]y[/link]"))
    code, printed, _ = run_try(repo, capsys, "--phase", f"{CHALLENGE}/{PHASE}", "hostile:latest", "--data",
                               str(own_data), "--logs")
    assert code == 1
    assert "[/] [link=https://x.example]y[/link]" in printed
    assert "\x1b" not in printed and "\\x1b]0;PWNED" in printed


def test_an_archive_url_with_a_terminal_escape_is_refused(repo, capsys, fake, own_data, tmp_path):
    mine = write_submission(repo, "mallory", "v1", "sha256:" + "a" * 64)
    archive = f'image_archive:\n  url: "https://x.example/a\\e[2J.tar"\n  sha256: "{"b" * 64}"'
    mine.write_text(mine.read_text().replace("image: sha256:" + "a" * 64, archive))
    code, printed, err = run_try(repo, capsys, str(mine), "--data", str(own_data))
    assert code == 1 and "holds a control or format character" in err and "\x1b" not in err + printed
