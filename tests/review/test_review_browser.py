"""The review app in headless Chromium (Playwright + Debian chromium): rating with the keyboard, resume after a
reload and in a new browser, the token, a cross-site POST, an answer with <script>, a clip id with ../."""

from __future__ import annotations

import html
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.review.app import ReviewConfig
from bench.review.ratings import queue, review_ratings
from bench.review.server import ReviewServer

from .conftest import RUN_ID, SYSTEMS, XSS

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture
def server(review_run):
    config = ReviewConfig(store=review_run.store, run_id=RUN_ID, reports_dir=review_run.reports_dir,
                          clips=review_run.clips())
    running = ReviewServer(config, "127.0.0.1", 0).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed (scripts/test installs it)")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    context.set_default_timeout(60_000)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.errors = errors  # type: ignore[attr-defined]
    yield opened
    context.close()


def _sign_in(page, server: ReviewServer, name: str = "Annelies") -> None:
    page.goto(server.url)
    assert "token=" not in page.url  # exchanged for a cookie and dropped from the address bar
    page.fill("#reviewer", name)
    page.select_option("#language", "nl")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/review?" in page.url


def _rate_with_keys(page, keys: list[str]) -> None:
    before = page.locator("#position").inner_text()
    for key in keys:
        page.keyboard.press(key)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("#position").inner_text() != before


def test_a_reviewer_rates_three_clips_with_the_keyboard_and_resumes(server, page, browser, review_run) -> None:
    _sign_in(page, server)
    assert page.locator("#position").inner_text() == "1" and page.locator("#rated-count").inner_text() == "0"
    content = page.content()
    assert not any(system in content for system in SYSTEMS)  # blinded
    page.keyboard.press("Enter")  # no rating chosen yet: nothing is sent
    assert "Pick a rating" in page.locator("#kbd-status").inner_text()
    _rate_with_keys(page, ["4", "m", "c"])
    _rate_with_keys(page, ["2", "p"])
    page.keyboard.press("/")  # into the comment box: keys are text there, not shortcuts
    page.keyboard.type("klemtoon 5 verkeerd")
    page.keyboard.press("Escape")
    _rate_with_keys(page, ["5"])
    stored = review_ratings(review_run.store, RUN_ID)
    assert [(r["score"], r["flags"], r["position"]) for r in stored] == [
        (4, ["mispronunciation", "cut_off"], 0), (2, ["unnatural_prosody"], 1), (5, [], 2)]
    assert stored[2]["comment"] == "klemtoon 5 verkeerd" and {r["reviewer"] for r in stored} == {"Annelies"}
    items = queue(review_run.store, RUN_ID, "Annelies", "nl")
    assert [r["clip_id"] for r in stored] == [i.sha256 for i in items[:3]]

    page.reload()
    assert page.locator("#position").inner_text() == "4" and page.locator("#rated-count").inner_text() == "3"
    with page.expect_navigation():
        page.keyboard.press("ArrowLeft")
    assert page.locator("#position").inner_text() == "3"
    assert page.locator('input[name="score"][value="5"]').is_checked()
    assert page.locator("#comment").input_value() == "klemtoon 5 verkeerd"
    assert page.errors == []  # type: ignore[attr-defined]

    other = browser.new_context()  # stop and resume: a new browser, the same name
    try:
        again = other.new_page()
        _sign_in(again, server)
        assert again.locator("#position").inner_text() == "4" and again.locator("#rated-count").inner_text() == "3"
    finally:
        other.close()


def test_a_request_without_the_token_is_refused(server, page) -> None:
    response = page.goto(f"{server.base}/")
    assert response is not None and response.status == 401
    assert "Access token required" in page.content()
    response = page.goto(f"{server.base}/?token=wrong")
    assert response is not None and response.status == 401
    assert page.context.cookies() == []


class _Attacker(BaseHTTPRequestHandler):
    """Another origin on this machine whose page posts a rating to the review server as soon as it loads."""

    form = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = self.form.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_a_cross_site_post_is_refused(server, page, review_run) -> None:
    _sign_in(page, server)  # the victim's browser holds the review cookie
    fields = {name: page.locator(f'#rating-form input[name="{name}"]').get_attribute("value")
              for name in ("csrf", "reviewer", "language", "position", "clip_id")}  # even a leaked CSRF token
    inputs = "".join(f'<input type="hidden" name="{k}" value="{html.escape(v)}">' for k, v in fields.items())
    _Attacker.form = (f'<html><body><form id="f" method="post" action="{server.base}/rate">{inputs}'
                      '<input type="hidden" name="score" value="1"></form>'
                      "<script>document.getElementById('f').submit()</script></body></html>")
    attacker = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        with page.expect_response(lambda r: r.url.endswith("/rate")) as posted:
            page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
        assert posted.value.status == 403
        assert posted.value.request.headers.get("origin") == f"http://127.0.0.1:{attacker.server_address[1]}"
    finally:
        attacker.shutdown()
        attacker.server_close()
    assert review_run.store.ratings(RUN_ID) == []


def test_an_answer_with_a_script_tag_is_shown_as_text(server, page, review_run) -> None:
    _sign_in(page, server)
    clips = review_run.clips()
    position = next(i.position for i in queue(review_run.store, RUN_ID, "Annelies", "nl")
                    if clips[i.sha256].answer == XSS)
    page.goto(f"{server.base}/review?reviewer=Annelies&language=nl&pos={position}")
    assert page.locator("#answer").inner_text() == XSS
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script").count() == 1  # only the page's own /static/review.js
    assert "SYNTHESIZED" in page.locator("#clip-source").inner_text()


def test_a_clip_id_with_dot_dot_is_refused(server, page, review_run) -> None:
    _sign_in(page, server)
    for path in ("/clip/..%2F..%2Fbench.sqlite", "/clip/..%2f..%2freports", "/clip/%2e%2e%2f%2e%2e%2fbench.sqlite"):
        response = page.request.get(server.base + path)
        assert response.status == 404, path
        assert b"SQLite" not in response.body()
    source = page.locator("#clip").get_attribute("src")
    response = page.request.get(server.base + source)
    assert response.status == 200 and response.body()[:4] == b"RIFF"
    assert page.evaluate("document.getElementById('clip').readyState >= 1 || new Promise(r => "
                         "document.getElementById('clip').addEventListener('loadedmetadata', () => r(true)))")
