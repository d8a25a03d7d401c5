"""Each phase's Submit row and "How to submit" box on the real built site: every form of submission
its config accepts (an image or a `docker save` archive of it, or a predictions file; a PDF under the
phase's label, required or optional; the links and description), none it refuses, and YAML that the
submission rules accept once its placeholders are filled in."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml

from runner.evaluation.examples import prepare_workspace
from runner.site import pages
from runner.site.build import SiteConfig, build_site
from runner.site.facts import JobDuration, average_job_duration
from runner.tree.loading import load_submission
from runner.tree.phase_model import Phase
from runner.tree.references import image_refusal
from runner.tree.result_model import Result, RunRecord
from runner.tree.store import Store
from tests.helpers import REPO, edit_yaml, phase_file

PHASES = [(slug, phase) for slug in Store(REPO).slugs() for phase in Store(REPO).phases(slug)]
LABEL = "Method *notes* [v2]"  # the optional PDF's label in the edited phase: text, never Markdown
# The edited phase asks for a link and takes comments too, with the organizer's words on each, and says more
# above its box: Markdown whose raw HTML must stay text.
EXTRAS = {"supplementary_url_choice": "required", "supplementary_url_label": "Preprint <v2>",
          "supplementary_url_help_text": "A link to your *arXiv* preprint",
          "supplementary_file_help_text": "At most 4 pages | no appendix", "allow_submission_comments": True,
          "submission_page_markdown": "## Before you submit\n\nRun the **sanity check** first: `/output/<case>.mha`."
                                      "\n\n<div><script>document.title='pwned'</script>\n\n[x](javascript:alert(1))"}
ALWAYS = {"phase", "title", "description", "publication_url", "code_url"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Store, Path]:
    """The example challenges' site, built by MkDocs; beside FLARE's required short paper, one phase
    takes an optional PDF under a label of its own, and images from one registry only."""
    repo = prepare_workspace(REPO, tmp_path_factory.mktemp("facts") / "repo")
    edit_yaml(phase_file(repo), supplementary_file_choice="optional", supplementary_file_label=LABEL,
              allowed_registries=["quay.io"], **EXTRAS)
    config = SiteConfig.read(repo)
    pages.generate(Store(repo), config.stage, config.templates, config.assets)
    return Store(repo), build_site(config, "mkdocs")


def box_and_row(site: Path, slug: str, phase: Phase) -> tuple[str, str]:
    """The phase's box YAML and its Submit row, as text, from the challenge's built page."""
    before, after = (site / slug / "index.html").read_text().split(
        f'<p class="admonition-title">How to submit to {phase.title}</p>', 1)
    box = after.split("<pre><code>", 1)[1].split("</code></pre>", 1)[0]
    row = before.rsplit("<td>Submit</td>", 1)[1].split("</td>", 1)[0]
    return html.unescape(box), html.unescape(re.sub(r"<[^>]+>", "", row))


def archive_form(box: str) -> str:
    """The box with its commented image_archive form taken instead of image."""
    lines = [line for line in box.splitlines() if not line.startswith("image:")]
    return "\n".join(line[2:] if line.startswith(("# image_archive:", "#   ")) else line for line in lines)


def accepted(text: str, phase: Phase, folder: Path) -> None:
    """`text`, its placeholders filled in, read by the submission rules of `phase` (ModelError if not)."""
    filled = re.sub(r"<[^<>]+>", "example", text.replace("<64 hex digits>", "ab" * 32))
    path = folder / "v1.yml"
    path.write_text(filled)
    submission = load_submission(path, challenge=phase.challenge, phase=phase.slug, participant="alice",
                                 kind=phase.submission_kind, extras=phase)
    if submission.image:
        assert image_refusal(submission.image, allowed=phase.allowed_registries, allow_local=False) is None


@pytest.mark.parametrize("slug, name", PHASES)
def test_the_box_and_the_submit_row_show_every_form_the_phase_takes(site, tmp_path, slug, name):
    store, built = site
    phase = store.phase(slug, name)
    box, row = box_and_row(built, slug, phase)
    shown = yaml.safe_load(box)
    takes_image = phase.submission_kind in ("algorithm", "training")
    paper = phase.supplementary_file_choice != "off"
    extras = {name for name, wanted in [("supplementary", paper), ("comment", phase.allow_submission_comments),
                                        ("supplementary_url", phase.supplementary_url_choice != "off")] if wanted}
    assert set(shown) == ALWAYS | {"image" if takes_image else "predictions"} | extras
    accepted(box, phase, tmp_path)
    if takes_image:  # the docker save archive, commented out as the alternative to image
        assert set(yaml.safe_load(archive_form(box))) == set(shown) - {"image"} | {"image_archive"}
        accepted(archive_form(box), phase, tmp_path)
        assert "or a docker save archive of it" in row and "image_archive" in row
    else:
        assert "image" not in box and "docker save" not in row
    label = " ".join(phase.supplementary_file_label.split())
    if paper:
        assert f"# {label} ({phase.supplementary_file_choice}): a PDF" in box
        assert f"with a PDF describing the method, {label} ({phase.supplementary_file_choice})" in row
    else:
        assert "PDF" not in box and "PDF" not in row


def test_the_labels_markdown_is_shown_as_text(site):
    _, built = site
    page = (built / "ellipsoid-segmentation" / "index.html").read_text()
    assert "<em>Method &#42;notes&#42; &#91;v2&#93;</em> (optional)" in page


def test_the_box_names_each_extra_in_the_organizers_words(site):
    _, built = site
    page = (built / "ellipsoid-segmentation" / "index.html").read_text()
    box = page.split('<p class="admonition-title">How to submit to Final test</p>', 1)[1].split("</div>", 1)[0]
    items = [re.sub(r"\s+", " ", item) for item in re.findall(r"<li>(.*?)</li>", box, flags=re.S)]
    assert items == [
        "<code>supplementary</code>, <em>Method &#42;notes&#42; &#91;v2&#93;</em> (optional): At most 4 pages &#124; "
        "no appendix",
        "<code>supplementary_url</code>, <em>Preprint &#60;v2&#62;</em> (required): A link to your &#42;arXiv&#42; "
        "preprint",
        "<code>comment</code>, <em>Comment</em> (optional): at most 128 characters, not shown on the site (it stays "
        "public in the repository, as the whole file)"]
    assert "; with a link, <em>Preprint &#60;v2&#62;</em> (required)" in page  # the Submit row


def test_the_submission_page_text_shows_above_the_box_and_its_html_as_text(site):
    _, built = site
    page = (built / "ellipsoid-segmentation" / "index.html").read_text()
    text = page.split('<div class="submission-page"', 1)[1].split('<div class="admonition example">', 1)[0]
    assert text.startswith(' markdown="0"><h2>Before you submit</h2>')
    assert "<strong>sanity check</strong>" in text and "<code>/output/&lt;case&gt;.mha</code>" in text
    assert "&lt;div&gt;&lt;script&gt;document.title=" in text and "<script>document" not in page
    assert "<a>x</a>" in text and "javascript:" not in text
    boxes = page.count('<p class="admonition-title">How to submit to ')
    assert boxes == len(Store(REPO).phases("ellipsoid-segmentation"))  # the rest of the page is whole


def test_a_phases_mean_running_time_counts_succeeded_results_that_show_it():
    def result(status: str, seconds: float | None, measured: bool = True) -> Result:
        run = RunRecord(image="x", wall_time_s=seconds) if measured else None
        return Result(challenge="c", phase="p", participant="a", submission="v1", status=status,
                      created_at="2026-03-01T10:00:00+00:00", started_at=None, finished_at=None, algorithm=run)
    results = [result("succeeded", 30.0), result("succeeded", 90.0), result("failed", 1000.0),
               result("succeeded", None), result("succeeded", None, measured=False)]
    assert average_job_duration(results) == JobDuration(60.0, 2)
    assert average_job_duration(results[2:]) is None
    assert str(JobDuration(125.2, 1)) == "2 min 5 s on average over 1 succeeded result"
