"""The review server's guards over plain HTTP: token, Host, same-origin POSTs with a CSRF token, clip ids, headers."""

from __future__ import annotations

import http.client
import re

import httpx
import pytest

from bench.review.app import COOKIE, ReviewConfig, create_app
from bench.review.server import ReviewServer

from .conftest import RUN_ID, SYSTEMS


@pytest.fixture
def server(review_run):
    config = ReviewConfig(store=review_run.store, run_id=RUN_ID, reports_dir=review_run.reports_dir,
                          clips=review_run.clips())
    running = ReviewServer(config, "127.0.0.1", 0).start()
    yield running
    running.stop()


def _client(server: ReviewServer) -> httpx.Client:
    client = httpx.Client(base_url=server.base, follow_redirects=False, timeout=30)
    response = client.get(f"/?token={server.config.token}")
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    return client


def _start(client: httpx.Client, server: ReviewServer, name: str = "An") -> str:
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    response = client.post("/start", data={"csrf": csrf, "reviewer": name, "language": "nl"},
                           headers={"origin": server.base})
    assert response.status_code == 303
    return csrf


def _rate_form(client: httpx.Client, csrf: str) -> dict:
    page = client.get("/review", params={"reviewer": "An", "language": "nl"}).text
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    assert fields["csrf"] == csrf
    return {**fields, "score": "4"}


def test_every_route_needs_the_token(server, review_run) -> None:
    clip_id = next(iter(review_run.clips()))
    with httpx.Client(base_url=server.base, follow_redirects=False, timeout=30) as anonymous:
        for path in ("/", "/review?reviewer=An&language=nl", f"/clip/{clip_id}", "/static/review.js"):
            assert anonymous.get(path).status_code == 401, path
        assert anonymous.get("/?token=not-the-token").status_code == 401
        assert anonymous.get("/", headers={"cookie": f"{COOKIE}=guess"}).status_code == 401
        assert anonymous.post("/rate", data={"score": "5"}, headers={"origin": server.base}).status_code == 401
        assert anonymous.get("/", headers={"authorization": f"Bearer {server.config.token}"}).status_code == 200


def test_pages_hide_the_systems_and_carry_security_headers(server) -> None:
    client = _client(server)
    _start(client, server)
    page = client.get("/review", params={"reviewer": "An", "language": "nl"})
    assert page.status_code == 200
    assert not any(system in page.text for system in SYSTEMS)
    headers = page.headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff" and headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "same-origin"


def test_posts_need_this_origin_and_the_csrf_token(server, review_run) -> None:
    client = _client(server)
    csrf = _start(client, server)
    form = _rate_form(client, csrf)
    assert client.post("/rate", data=form, headers={"origin": "http://evil.example"}).status_code == 403
    assert client.post("/rate", data=form, headers={"origin": "http://127.0.0.1:1"}).status_code == 403
    assert client.post("/rate", data=form).status_code == 403  # neither Origin nor Referer
    assert client.post("/rate", data={**form, "csrf": "x"}, headers={"origin": server.base}).status_code == 403
    assert review_run.store.ratings(RUN_ID) == []
    ok = client.post("/rate", data=form, headers={"referer": f"{server.base}/review"})
    assert ok.status_code == 303
    assert [r["score"] for r in review_run.store.ratings(RUN_ID)] == [4]


def test_a_loopback_server_refuses_foreign_host_headers(server) -> None:
    client = _client(server)
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/", headers={"host": f"localhost:{server.port}"}).status_code == 200


def test_clip_ids_cannot_leave_the_run(server, review_run) -> None:
    client = _client(server)
    clip_id = next(iter(review_run.clips()))
    good = client.get(f"/clip/{clip_id}")
    assert good.status_code == 200 and good.headers["content-type"] == "audio/wav" and good.content[:4] == b"RIFF"
    recording = next(a["sha256"] for a in review_run.store.artifacts(RUN_ID) if a["kind"] == "audio")
    for path in ("/clip/..%2F..%2Fbench.sqlite", "/clip/%2e%2e/%2e%2e/bench.sqlite", "/clip/" + "A" * 64,
                 f"/clip/{clip_id}.wav", f"/clip/{recording}"):  # the caller/agent recording is not a clip
        assert client.get(path).status_code == 404, path
    # a raw request line that no client normalizes
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("GET", "/clip/../../bench.sqlite", skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{server.port}")
    conn.putheader("Cookie", f"{COOKIE}={server.config.token}")
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 404 and b"SQLite" not in response.read()
    conn.close()


def test_a_non_loopback_bind_still_requires_the_token(review_run) -> None:
    from starlette.testclient import TestClient

    config = ReviewConfig(store=review_run.store, run_id=RUN_ID, reports_dir=review_run.reports_dir,
                          clips=review_run.clips(), allowed_hosts=None)  # as for --host 0.0.0.0
    with TestClient(create_app(config), base_url="http://192.0.2.10:8766") as client:
        assert client.get("/").status_code == 401
        assert client.get(f"/?token={config.token}", follow_redirects=False).status_code == 303
        assert client.get("/").status_code == 200
