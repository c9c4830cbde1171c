"""The fluency review web app (Starlette): blinded clips, ratings committed to the store as they are given.

Routes: ``GET /`` start page (name, language) · ``POST /start`` fixes the reviewer's queue · ``GET /review``
one clip with question, answer, rating form and progress (``pos`` picks a position, else the first unrated) ·
``POST /rate`` commits one rating and moves on · ``GET /clip/<id>`` the audio · ``GET /static/review.{js,css}``.

Security, in ``Guard`` (every request) and the form handlers:

- the access token is required on every request: ``?token=`` once (exchanged for an HttpOnly, SameSite=Strict
  cookie and redirected away, so it leaves the address bar), the cookie, or ``Authorization: Bearer``;
- on a loopback bind the Host header must name the loopback address and port (no DNS rebinding);
- every POST must come from this origin (``Origin``, else ``Referer``, equal to ``http://<Host>``) and carry the
  form's CSRF token; a cross-site POST is refused with 403;
- clip ids are validated as 64 hex digits by ``ArtifactStore.path_for`` and must be a clip of the served run, so
  nothing else on disk can be reached;
- templates are autoescaped; a Content-Security-Policy allows only this origin's script file (no inline script),
  and pages are ``no-store``, not framable, with ``nosniff``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bench.review.clips import Clip
from bench.review.queue import DEFAULT_REPEAT_SHARE, ensure_queue
from bench.review.ratings import (
    FLAGS,
    MAX_COMMENT,
    NewRating,
    add_ratings,
    normalize_reviewer,
    queue,
    ratings_by_position,
)
from bench.store import ArtifactStore, Store

TEMPLATES = Path(__file__).resolve().parent / "templates"
COOKIE = "vb_review_token"
LANGUAGE_NAMES = {"nl": "Dutch", "en": "English", "fr": "French", "it": "Italian"}
SCORE_LABELS = [(1, "unusable"), (2, "poor"), (3, "acceptable"), (4, "good"), (5, "natural")]
FLAG_KEYS = {"mispronunciation": "m", "unnatural_prosody": "p", "wrong_language": "w", "cut_off": "c"}
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
                                 b"img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


@dataclass
class ReviewConfig:
    """What one review server serves."""

    store: Store
    run_id: str
    reports_dir: Path
    clips: dict[str, Clip]
    language: str | None = None
    repeat_share: float = DEFAULT_REPEAT_SHARE
    seed: int = 0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    #: Host header values accepted (None: any — a non-loopback bind, where the token is the guard)
    allowed_hosts: set[str] | None = None

    @property
    def languages(self) -> list[str]:
        present = sorted({c.language for c in self.clips.values()})
        return [self.language] if self.language else present

    def clip_ids(self, language: str) -> list[str]:
        return [c.clip_id for c in self.clips.values() if c.language == language]


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    return env


def _page(env: Environment, name: str, status: int = 200, **context) -> HTMLResponse:
    return HTMLResponse(env.get_template(name).render(language_names=LANGUAGE_NAMES, **context), status_code=status)


class Guard:
    """ASGI middleware: Host check, access token, same-origin POSTs, security headers on every response."""

    def __init__(self, app: ASGIApp, config: ReviewConfig, env: Environment):
        self.app = app
        self.config = config
        self.env = env

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        response = self._refuse(Request(scope))
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _message(self, status: int, heading: str, message: str) -> Response:
        return _page(self.env, "message.html.j2", status, heading=heading, message=message, run_id=None)

    def _refuse(self, request: Request) -> Response | None:
        host = request.headers.get("host", "").lower()
        allowed = self.config.allowed_hosts
        if allowed is not None and host not in allowed:
            return PlainTextResponse("unexpected Host header", status_code=400)
        token = self.config.token
        given = request.query_params.get("token")
        if given is not None:
            if not secrets.compare_digest(given.encode(), token.encode()) or request.method not in ("GET", "HEAD"):
                return self._message(401, "Access token required", "The access token in this link is not valid.")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
            return redirect
        cookie = request.cookies.get(COOKIE, "")
        bearer = request.headers.get("authorization", "")
        bearer = bearer[7:] if bearer.lower().startswith("bearer ") else ""
        if not any(v and secrets.compare_digest(v.encode(), token.encode()) for v in (cookie, bearer)):
            return self._message(401, "Access token required",
                                 "Open the link with the access token that `voice-bench review serve` printed.")
        if request.method not in ("GET", "HEAD") and not self._same_origin(request, host):
            return self._message(403, "Cross-site request refused",
                                 "This form can only be sent from the review pages themselves.")
        return None

    @staticmethod
    def _same_origin(request: Request, host: str) -> bool:
        expected = f"{request.url.scheme}://{host}"
        origin = request.headers.get("origin")
        if origin is None:
            referer = request.headers.get("referer")
            if not referer:
                return False
            parts = urlsplit(referer)
            origin = f"{parts.scheme}://{parts.netloc}"
        return origin.lower() == expected


def create_app(config: ReviewConfig) -> ASGIApp:
    """The review app for ``config`` wrapped in its ``Guard``."""
    env = _environment()
    store = config.store
    files = ArtifactStore(config.reports_dir, config.run_id)
    script = (TEMPLATES / "review.js.j2").read_text(encoding="utf-8")
    style = (TEMPLATES / "review.css").read_text(encoding="utf-8")

    def nav(reviewer: str, language: str):
        def url(position: int | None = None) -> str:
            query = {"reviewer": reviewer, "language": language}
            if position is not None:
                query["pos"] = str(position)
            return "/review?" + urlencode(query)
        return url

    def start_page(status: int = 200, error: str = "", reviewer: str = "", language: str = "") -> HTMLResponse:
        counts = {lang: len(config.clip_ids(lang)) for lang in config.languages}
        return _page(env, "start.html.j2", status, run_id=config.run_id, csrf=config.csrf, error=error,
                     reviewer=reviewer, language=language or (config.languages[0] if config.languages else ""),
                     languages=config.languages, fixed_language=config.language, counts=counts)

    def bad(message: str, status: int = 400) -> HTMLResponse:
        return _page(env, "message.html.j2", status, heading="Not accepted", message=message, run_id=config.run_id)

    def csrf_ok(form) -> bool:
        given = str(form.get("csrf", ""))
        return bool(given) and secrets.compare_digest(given.encode(), config.csrf.encode())

    def who(reviewer: str, language: str) -> tuple[str, str]:
        """Validated (reviewer, language); ValueError with a reviewer-facing message."""
        name = normalize_reviewer(reviewer)
        if language not in config.languages:
            raise ValueError(f"no clips in language {language!r} here")
        return name, language

    async def home(request: Request) -> Response:
        return start_page()

    async def start(request: Request) -> Response:
        form = await request.form()
        if not csrf_ok(form):
            return bad("The form's security token is missing or stale; reload the start page.", 403)
        try:
            reviewer, language = who(str(form.get("reviewer", "")), str(form.get("language", "")))
        except ValueError as exc:
            return start_page(400, f"Not accepted: {exc}.", str(form.get("reviewer", ""))[:64])
        ensure_queue(store, config.run_id, reviewer, language, config.clip_ids(language),
                     repeat_share=config.repeat_share, seed=config.seed)
        return RedirectResponse(nav(reviewer, language)(), status_code=303)

    async def review(request: Request) -> Response:
        try:
            reviewer, language = who(request.query_params.get("reviewer", ""),
                                     request.query_params.get("language", ""))
        except ValueError as exc:
            return start_page(400, f"Not accepted: {exc}.")
        items = queue(store, config.run_id, reviewer, language)
        if not items:
            return start_page(200, "Enter your name to start.", reviewer, language)
        rated = {pos: r for pos, r in ratings_by_position(store, config.run_id, reviewer, language).items()
                 if pos < len(items) and r["clip_id"] == items[pos].sha256}
        url = nav(reviewer, language)
        raw = request.query_params.get("pos")
        if raw is not None:
            if not raw.isdigit() or int(raw) >= len(items):
                return bad(f"There is no clip {raw} in your queue of {len(items)}.", 404)
            position = int(raw)
        else:
            unrated = [i.position for i in items if i.position not in rated]
            if not unrated:
                return _page(env, "done.html.j2", run_id=config.run_id, reviewer=reviewer, language=language,
                             total=len(items), nav_url=url)
            position = unrated[0]
        clip = config.clips.get(items[position].sha256)
        if clip is None:
            return bad("This clip's audio is no longer available.", 410)
        return _page(env, "review.html.j2", run_id=config.run_id, reviewer=reviewer, language=language,
                     position=position, total=len(items), rated=len(rated), clip=clip, prior=rated.get(position),
                     csrf=config.csrf, score_labels=SCORE_LABELS, flags=list(FLAGS.items()), flag_keys=FLAG_KEYS,
                     max_comment=MAX_COMMENT, nav_url=url)

    async def rate(request: Request) -> Response:
        form = await request.form()
        if not csrf_ok(form):
            return bad("The form's security token is missing or stale; reload the page.", 403)
        try:
            reviewer, language = who(str(form.get("reviewer", "")), str(form.get("language", "")))
        except ValueError as exc:
            return bad(f"Not accepted: {exc}.")
        items = queue(store, config.run_id, reviewer, language)
        raw = str(form.get("position", ""))
        if not raw.isdigit() or int(raw) >= len(items):
            return bad("This clip is not in your queue; reload the page.", 409)
        item = items[int(raw)]
        if str(form.get("clip_id", "")) != item.sha256:
            return bad("This page is out of date; reload it.", 409)
        try:
            # validated from the form's text fields (the score is parsed here)
            rating = NewRating.model_validate(
                {"run_id": config.run_id, "clip_id": item.sha256, "reviewer": reviewer,
                 "score": str(form.get("score", "")), "flags": [str(f) for f in form.getlist("flags")],
                 "comment": str(form.get("comment", "")).strip(), "language": language, "position": item.position,
                 "is_repeat": item.is_repeat, "source": "web"})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            return bad(f"Not saved: {where}: {error['msg']}.")
        add_ratings(store, [rating])
        following = item.position + 1
        target = nav(reviewer, language)(following if following < len(items) else None)
        return RedirectResponse(target, status_code=303)

    async def clip(request: Request) -> Response:
        clip_id = request.path_params["clip_id"]
        try:
            files.path_for(clip_id, "audio/wav")  # rejects anything but 64 hex digits
        except ValueError:
            return PlainTextResponse("no such clip", status_code=404)
        found = config.clips.get(clip_id)
        if found is None or not found.path.is_file():
            return PlainTextResponse("no such clip", status_code=404)
        return FileResponse(found.path, media_type=found.media_type)

    async def static_js(request: Request) -> Response:
        return Response(script, media_type="text/javascript")

    async def static_css(request: Request) -> Response:
        return Response(style, media_type="text/css")

    app = Starlette(routes=[
        Route("/", home, methods=["GET"]),
        Route("/start", start, methods=["POST"]),
        Route("/review", review, methods=["GET"]),
        Route("/rate", rate, methods=["POST"]),
        Route("/clip/{clip_id:path}", clip, methods=["GET"]),
        Route("/static/review.js", static_js, methods=["GET"]),
        Route("/static/review.css", static_css, methods=["GET"]),
    ])
    return Guard(app, config, env)
