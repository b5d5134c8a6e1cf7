"""In a real browser: text from a dataset, a judge, a person or a name never fetches or links.

Every field a person sees carries an image, a link, raw HTML and bare addresses that point at a host
outside the app (item text and metadata, the judge's reason and raw reply and its error, a comment,
the annotator's name, the run, template, criterion, dataset and project names). The test opens the
Annotate, Judge, Datasets, Calibrate and Reports pages and checks with Playwright's request events
that the browser asks nothing of any origin but the app's, and that the pages hold no <img> with a
remote address and no <a> pointing at the attacker's host.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from evalcore import runs
from evalcore.labels import LIKERT_5
from evalcore.store import JudgeResultInput, Store
from tests.browser.conftest import AppServer, add_accounts, fill_sign_in, wait_idle

HOST = "attacker.example"


def payload(tag: str) -> str:
    """Markdown and HTML that would fetch from, or link to, HOST if rendered."""
    return (
        f"{tag}: **bold** ![i-{tag}](http://{HOST}/{tag}.png) [l-{tag}](http://{HOST}/{tag}) "
        f'<img src="http://{HOST}/{tag}-tag.png"> <a href="http://{HOST}/{tag}-a">a</a> '
        f"<http://{HOST}/{tag}-auto> http://{HOST}/{tag}-bare www.{HOST} me@{HOST}\n\n"
        f"- list ![x][r-{tag}]\n\n[r-{tag}]: http://{HOST}/{tag}-ref.png"
    )


def short(tag: str) -> str:
    """A payload that fits in a name."""
    return f"{tag} ![n](http://{HOST}/{tag}.png) [go](http://{HOST}/{tag})"


ANNOTATOR = f"eve [me](http://{HOST}/user) ![u](http://{HOST}/user.png)"
RATER = f"ann ![r](http://{HOST}/rater.png)"  # has labelled nothing yet


def seed(store: Store) -> None:
    project = store.create_project(
        short("project"), description=payload("description"), settings={"annotators_per_item": 5}
    )
    items = pd.DataFrame(
        {
            "item_id": ["h1", "h2"],
            "prompt": [payload("prompt"), payload("prompt2")],
            "response": [payload("response"), payload("response2")],
            "context": [payload("context"), payload("context2")],
            "reference": [payload("reference"), payload("reference2")],
            "source": [payload("metadata"), short("metadata2")],
        }
    )
    dataset = store.save_dataset(project.id, short("dataset"), items)
    criterion = store.create_criterion(
        project.id, short("criterion"), kind="pointwise", scale=LIKERT_5, rubric=payload("rubric")
    )
    store.import_labels(
        dataset.id,
        criterion.id,
        pd.DataFrame(
            {
                "item_id": ["h1", "h2", "h1", "h2"],
                "annotator": [ANNOTATOR, ANNOTATOR, "bob", "bob"],
                "label": ["4", "2", "4", "3"],
                "comment": [payload("comment"), None, None, short("comment2")],
            }
        ),
    )
    template = store.create_template(project.id, short("template"), criterion.id)
    content = runs.new_template_content(template.name, criterion)
    version = store.save_template_version(
        template.id, content, author=ANNOTATOR, note=short("note")
    )
    run = store.create_run(
        dataset.id,
        criterion.id,
        name=short("run"),
        model=short("model"),
        template_version_id=version.id,
        n_planned=2,
    )
    pks = {str(ext): int(pk) for pk, ext in store.items_frame(dataset.id)["item_id"].items()}
    store.record_results(
        run.id,
        [
            JudgeResultInput(
                item_id=pks["h1"],
                status="ok",
                label="4",
                reason=payload("reason"),
                raw=payload("raw"),
            ),
            JudgeResultInput(
                item_id=pks["h2"], status="failed", error=payload("error"), raw=payload("raw2")
            ),
        ],
    )
    store.set_run_status(run.id, "running")
    store.set_run_status(run.id, "done")
    store.import_judge_labels(
        dataset.id,
        criterion.id,
        short("imported"),
        pd.Series({"h1": "5", "h2": "1"}),
        pd.Series({"h1": payload("imported-reason"), "h2": short("r2")}),
    )


@pytest.fixture(scope="module")
def hostile_server(
    tmp_path_factory: pytest.TempPathFactory, chromium_path: str
) -> Iterator[AppServer]:
    path: Path = tmp_path_factory.mktemp("hostile") / "evalcore.sqlite"
    with Store.open(f"sqlite:///{path}") as store:
        seed(store)
    add_accounts(f"sqlite:///{path}", {ANNOTATOR: "engineer", RATER: "annotator"}, demo=False)
    server = AppServer(path, {"EVALCORE_NO_DEMO": "1"})
    yield server
    server.stop()


class Watch:
    """Every request the page makes to an origin other than the app's."""

    def __init__(self, page: object, origin: str) -> None:
        self.origin = origin
        self.outside: list[str] = []
        page.on("request", self._seen)  # type: ignore[attr-defined]

    def _seen(self, request: object) -> None:
        url = str(request.url)  # type: ignore[attr-defined]
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme in ("data", "blob", "about"):
            return
        parts = urllib.parse.urlsplit(url)
        if f"{parts.hostname}:{parts.port}" != self.origin:
            self.outside.append(url)


def _check_dom(page: object, where: str) -> None:
    images = page.evaluate(  # type: ignore[attr-defined]
        "() => [...document.querySelectorAll('img')].map(i => i.getAttribute('src') || '')"
    )
    remote = [s for s in images if s.startswith(("http:", "https:", "//")) and HOST in s]
    assert not remote, f"{where}: remote images {remote}"
    links = page.evaluate(  # type: ignore[attr-defined]
        "() => [...document.querySelectorAll('a')].map(a => a.getAttribute('href') || '')"
    )
    bad = [h for h in links if HOST in h or h.startswith("mailto:")]
    assert not bad, f"{where}: links {bad}"


def _open(page: object, url: str, user: str, text: str, where: str) -> None:
    page.goto(url)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign in").wait_for()  # type: ignore[attr-defined]
    fill_sign_in(page, user)
    page.get_by_text(text).first.wait_for()  # type: ignore[attr-defined]
    wait_idle(page)
    page.wait_for_timeout(500)  # type: ignore[attr-defined]  # images would have been asked for
    _check_dom(page, where)


def _click(page: object, text: str, where: str) -> None:
    page.get_by_text(text, exact=True).first.click()  # type: ignore[attr-defined]
    wait_idle(page)
    page.wait_for_timeout(500)  # type: ignore[attr-defined]
    _check_dom(page, where)


# who signs in: the names themselves are hostile, and the sidebar shows them
ENGINEER = ANNOTATOR
RATER_URL = RATER

#: (page path, query, a text that says it has drawn, tabs or sections to click through)
PAGES = {
    "home": ("", ENGINEER, "Criteria", ()),
    "annotate": ("annotate", RATER_URL, "Item 1 of 2", ("Raw",)),
    "datasets": ("datasets", ENGINEER, "Look at the items of", ("Agreement", "Export")),
    "judge": ("judge", ENGINEER, "Version history", ("Runs",)),
    "calibrate": ("calibrate", ENGINEER, "Calibrate", ()),
    "reports": ("reports", ENGINEER, "Reports", ()),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_a_page_fetches_and_links_nothing_from_dataset_judge_or_user_text(
    hostile_server: AppServer, page: object, name: str
) -> None:
    base = hostile_server.url
    watch = Watch(page, base.removeprefix("http://"))
    path, user, ready, clicks = PAGES[name]
    _open(page, f"{base}/{path}", user, ready, name)
    for text in clicks:
        _click(page, text, f"{name}, {text}")
    assert not watch.outside, f"requests outside the app: {watch.outside}"
