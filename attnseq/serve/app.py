"""The FastAPI application: the page, ``GET /runs``, ``POST /translate`` and FastAPI's own
OpenAPI docs at ``/docs``, over one or more loaded runs.

Every bad request gets a 4xx answer ``{"error": "FIELD: what is wrong", "field": "FIELD"}``:
malformed JSON or a body that is not an object, a field of the wrong type (types are strict:
``"beam_size": true``, ``"3"`` or ``1e999`` is refused, not coerced), a blank text, a text
holding a lone surrogate (not Unicode text), a text over the limit (413), a beam out of range or
wider than the run's engine searches, more hypotheses than the beam holds, an unknown run.
Control characters (NUL, ...) are text like any other: pieces outside the run's vocabulary are
translated as unknown and listed in the answer's ``unknown``. A fault of the server itself is a
500 ``{"error": "internal error ...", "field": null}`` whose details (the traceback) go to the
server's log only, never into an answer. Decoding happens on each run's own thread
(batcher.py), never on the event loop.
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import re
import socket
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException

from ..errors import ConfigError, UserError, user_message
from ..translator import Translation, Translator
from ..utils import shown
from .batcher import Busy, DecodeWorker, Job
from .payload import run_payload, translation_payload
from .schemas import ErrorResponse, RunInfo, TranslateRequest, TranslateResponse

log = logging.getLogger("attnseq")

STATIC = Path(__file__).parent / "static"
MAX_CHARS = 1000  # longest source text a request may send
MAX_BEAM = 16  # widest beam a request may ask for
MAX_FILE_BYTES = 4_000_000  # largest file POST /translate/file takes (a run whose sources are files)
FILE_ROUTE = "/translate/file"


@dataclass
class LoadedRun:
    """A run folder loaded for serving, under the name the page and the API call it."""

    name: str
    path: str
    translator: Translator


def run_names(paths: Sequence[str]) -> list[str]:
    """Short distinct names for run folders: the last part of each path, with as many parts
    before it as it takes to tell them apart (``runs/a/run``, ``runs/b/run`` -> ``a/run``, ``b/run``)."""
    parts = [Path(p).resolve().parts for p in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    raise UserError("serve: the same run folder is given twice")


def load_runs(
    paths: Sequence[str], checkpoint: str = "best", precision: str | None = None, engine: str | None = None
) -> list[LoadedRun]:
    """Each run folder of ``paths`` loaded (on the CPU, at ``precision``: None, each run's
    decode.precision; by ``engine`` where given, see attnseq.load), named ``NAME`` when given as
    ``NAME=FOLDER``, otherwise by ``run_names``."""
    from ..api import load

    given = [str(p).split("=", 1) if re.match(r"^[\w.-]+=", str(p)) else [None, str(p)] for p in paths]
    folders = [folder for _, folder in given]
    names = [name or default for (name, _), default in zip(given, run_names(folders))]
    if len(set(names)) < len(names):
        raise UserError(f"serve: two runs are named alike ({', '.join(names)}); name them NAME=FOLDER")
    return [
        LoadedRun(name, folder, load(folder, checkpoint=checkpoint, precision=precision, engine=engine))
        for name, folder in zip(names, folders)
    ]


# -- what the handlers share -------------------------------------------------------------------
@dataclass
class Limits:
    """What one request may ask of this server (``attnseq serve --max-chars``, ``--max-beam``)."""

    max_chars: int = MAX_CHARS
    max_beam: int = MAX_BEAM
    max_file_bytes: int = MAX_FILE_BYTES  # 0 where no run's sources are files (no POST /translate/file)

    @property
    def body_bytes(self) -> int:
        """The largest request body: the longest text, each character written as \\uXXXX, and the rest."""
        return 6 * self.max_chars + 4096

    def body_limit(self, path: str) -> int:
        """The largest body a request to ``path`` may send: a file's to POST /translate/file."""
        return self.max_file_bytes if path == FILE_ROUTE else self.body_bytes


@dataclass
class Served:
    """What the handlers read from ``app.state.served``: the runs by name (the first is a
    request's default), each run's decoding thread, the limits, and the runs' descriptions."""

    runs: dict[str, LoadedRun]
    workers: dict[str, DecodeWorker]
    limits: Limits
    infos: list[dict]

    @property
    def default_run(self) -> str:
        return next(iter(self.runs))


def served(request: Request) -> Served:
    return request.app.state.served


# -- errors: every refusal is one JSON line naming the field ---------------------------------
class ErrorAnswer(JSONResponse):
    """JSON with every non-ASCII character escaped, so that whatever a request held (a lone
    surrogate in a field's name) can be told back in an answer."""

    def render(self, content) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error(status: int, message: str, field: str | None = None) -> JSONResponse:
    """The answer to a bad request: {"error": message, "field": field}."""
    return ErrorAnswer({"error": message, "field": field}, status_code=status)


class RequestError(Exception):
    """A request the server refuses: status, message and the field at fault."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


def validation_message(exc: RequestValidationError) -> tuple[str, str]:
    """(message, field) for the first problem pydantic found in a request body."""
    first = exc.errors()[0]
    loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "query")]
    kind = first.get("type", "")
    if kind == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "")
        twice = re.match(r"the key ('.*') appears twice", reason)
        if twice:  # valid JSON, but which of the two values was meant?
            return f"{ast.literal_eval(twice.group(1))}: {reason}", ast.literal_eval(twice.group(1))
        return f"body: not valid JSON{f' ({reason})' if reason else ''}", "body"
    if not loc and isinstance(first.get("input"), (bytes, str)):
        return 'body: expected JSON (Content-Type: application/json) such as {"text": "a sentence"}', "body"
    if not loc or loc[0].isdigit():
        return 'body: expected a JSON object such as {"text": "a sentence"}', "body"
    field = loc[0]
    if kind == "extra_forbidden":
        known = ", ".join(TranslateRequest.model_fields)
        return f"{field}: unknown field; a request takes {known}", field
    if kind in EXPECTED:
        return f"{'.'.join(loc)}: expected {EXPECTED[kind]}, got {shown(first.get('input'))}", field
    return f"{'.'.join(loc)}: {first.get('msg', 'invalid')}", field


# what a strict field of each type takes, by pydantic's error type
EXPECTED = {"int_type": "a whole number (a JSON integer)", "string_type": "a string", "bool_type": "true or false"}


def decode_field(err: ConfigError) -> str | None:
    """The request field a decode setting's error is about (``decode.n_best`` -> ``n_best``)."""
    return err.key.removeprefix("decode.") if err.key and err.key.startswith("decode.") else None


async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    message, field = validation_message(exc)
    return error(422, message, field)


def too_large(limits: Limits, path: str = "/translate") -> JSONResponse:
    """The 413 answer to a body over ``limits.body_limit(path)``."""
    if path == FILE_ROUTE and not limits.max_file_bytes:
        return error(422, "run: no run of this server reads files (data.input text); POST /translate a text", "run")
    if path == FILE_ROUTE:
        return error(
            413,
            f"body: over this server's limit of {limits.max_file_bytes} bytes for a file "
            "(attnseq serve --max-file-bytes)",
            "body",
        )
    return error(
        413,
        f"body: over this server's limit of {limits.body_bytes} bytes (text: at most "
        f"{limits.max_chars} characters, attnseq serve --max-chars)",
        "text",
    )


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 413:  # FastAPI's max_body_size, a body without a Content-Length read too far
        return too_large(served(request).limits, request.url.path)
    if exc.status_code == 400:  # FastAPI could not parse the body (not UTF-8, say)
        return error(400, 'body: not JSON text (UTF-8 JSON such as {"text": "a sentence"})', "body")
    return error(exc.status_code, str(exc.detail))


async def failed(request: Request, exc: Exception) -> JSONResponse:
    """A fault of the server (a bug): its traceback in the server's log, one generic JSON line
    for the page; what went wrong is never told to the client."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error(500, "internal error: the request could not be answered (the server's log says why)")


async def refused(request: Request, exc: RequestError) -> JSONResponse:
    return error(exc.status, exc.message, exc.field)


ERROR_HANDLERS = {
    RequestValidationError: invalid_request,
    HTTPException: http_error,
    Exception: failed,
    RequestError: refused,
}


# -- the translation call ------------------------------------------------------------------------
def renderer(run: LoadedRun):
    """The function that turns a job's translation by ``run`` into its JSON answer (bytes)."""

    def render(job: Job, translation: Translation) -> bytes:
        payload = translation_payload(run.name, run.translator, translation, job.with_attention)
        return json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")

    return render


def checked_job(served: Served, request: TranslateRequest) -> tuple[str, Job]:
    """The run ``request`` names and its job, every field checked (a RequestError naming the
    field otherwise); n_best defaults to the whole beam."""
    name = request.run if request.run is not None else served.default_run
    if name not in served.runs:
        raise RequestError(422, f"run: no run named {name!r}; this server has {', '.join(served.runs)}", "run")
    max_chars, max_beam = served.limits.max_chars, served.limits.max_beam
    if not request.text.strip():
        raise RequestError(422, "text: empty; send a sentence to translate", "text")
    surrogate = next((i for i, c in enumerate(request.text) if "\ud800" <= c <= "\udfff"), None)
    if surrogate is not None:
        raise RequestError(
            422,
            f"text: not Unicode text (a lone surrogate U+{ord(request.text[surrogate]):04X} "
            f"at character {surrogate + 1})",
            "text",
        )
    if len(request.text) > max_chars:
        raise RequestError(
            413,
            f"text: {len(request.text)} characters, over this server's limit of "
            f"{max_chars} (attnseq serve --max-chars)",
            "text",
        )
    beam_size, n_best = request.beam_size, request.n_best
    if beam_size is not None and not 1 <= beam_size <= max_beam:
        raise RequestError(
            422, f"beam_size: expected 1 to {max_beam} (attnseq serve --max-beam), got {beam_size}", "beam_size"
        )
    if n_best is not None and not 1 <= n_best <= max_beam:
        raise RequestError(422, f"n_best: expected 1 to {max_beam}, got {n_best}", "n_best")
    if n_best is None and beam_size is not None:
        n_best = beam_size  # the whole beam, best first
    try:
        served.runs[name].translator.decode_settings(beam_size=beam_size, n_best=n_best)
    except ConfigError as err:
        field = decode_field(err)  # the message said as the request's field: "beam_size: ..."
        message = f"{field}: {user_message(err).removeprefix(err.key + ': ')}" if field else user_message(err)
        raise RequestError(422, message, field) from None
    return name, Job(request.text, beam_size, n_best, request.return_attention)


def checked_file_job(
    served: Served, body: bytes, run: str | None, beam_size: int | None, n_best: int | None, return_attention: bool
) -> tuple[str, Job]:
    """The run and the job of a file sent to POST /translate/file (its bytes the ``body``), checked
    as a text's is (the run reads files, the body holds some, the beam in range); a RequestError
    naming the field otherwise."""
    request = TranslateRequest(
        text="file", run=run, beam_size=beam_size, n_best=n_best, return_attention=return_attention
    )
    name, job = checked_job(served, request)
    kind = served.runs[name].translator.pipeline.inputs
    if kind.reads_text:
        raise RequestError(422, f"run: {name} reads text (data.input text); POST /translate with its text", "run")
    if not body:
        raise RequestError(422, f"body: empty; send the {kind.name} file's bytes", "body")
    job.text = body
    return name, job


async def translation(worker: DecodeWorker, job: Job) -> bytes:
    """``job`` decoded on its run's thread: the JSON answer, or a RequestError (503 when the
    run's queue is full, 422 for what the search raised that attnseq.errors' table calls the
    user's error)."""
    try:
        future = worker.submit(job)
    except Busy as err:
        raise RequestError(503, f"server busy: {err}") from None
    try:
        return await asyncio.wrap_future(future)
    except Exception as err:
        message = user_message(err)  # (attnseq.errors' table: None for a bug, the 500 answer's)
        if message is None:
            raise
        raise RequestError(422, message, getattr(err, "argument", None)) from None


# -- the routes ----------------------------------------------------------------------------------
def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object of ``pairs``, refused (JSONDecodeError) where a key appears twice: json.loads
    would keep the last value without a word, and a client that meant the first would never know."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise json.JSONDecodeError(f"the key {key!r} appears twice; give each field once", "", 0)
        found[key] = value
    return found


class StrictJSONRequest(Request):
    """A request whose JSON body holds every object's keys once (``unique_keys``)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=unique_keys)
        return self._json


class StrictJSONRoute(APIRoute):
    """The routes of this API: their JSON bodies are read by StrictJSONRequest."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict


routes = APIRouter(route_class=StrictJSONRoute)


@routes.get("/", include_in_schema=False)
async def page():
    return FileResponse(STATIC / "index.html")


@routes.get("/runs", response_model=list[RunInfo], summary="the runs this server decodes with")
async def list_runs(http: Request):
    return served(http).infos


@routes.post(
    "/translate",
    summary="translate one sentence with one run",
    responses={
        200: {"model": TranslateResponse},
        413: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)
async def translate(request: TranslateRequest, http: Request):
    name, job = checked_job(served(http), request)
    body = await translation(served(http).workers[name], job)
    return Response(body, media_type="application/json")


@routes.post(
    FILE_ROUTE,
    summary="translate one file (an image) with a run whose sources are files",
    responses={
        200: {"model": TranslateResponse},
        413: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)
async def translate_file(
    http: Request,
    run: str | None = None,
    beam_size: int | None = None,
    n_best: int | None = None,
    return_attention: bool = True,
):
    """The body is the file's bytes (any Content-Type); the settings are the query's, as /translate's."""
    name, job = checked_file_job(served(http), await http.body(), run, beam_size, n_best, return_attention)
    body = await translation(served(http).workers[name], job)
    return Response(body, media_type="application/json")


@asynccontextmanager
async def stop_workers(app: FastAPI):
    """The application's lifespan: at shutdown each run's decoding thread finishes its requests."""
    yield
    for worker in app.state.served.workers.values():
        await asyncio.to_thread(worker.stop)


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def allowed_hosts(bind: str, extra: Sequence[str] = ()) -> frozenset[str] | None:
    """The names a request's Host header may give for a server listening on ``bind``: the bind
    address, the loopback names, ``extra`` (``--allowed-host``), and the machine's own names when
    it listens on every address (0.0.0.0, ::). None (any Host) where ``extra`` holds "*".

    Answering only these stops DNS rebinding: a page of another site whose name is made to
    resolve to 127.0.0.1 reaches a loopback server, but its requests carry that site's name."""
    if "*" in extra:
        return None
    names = {bind.strip("[]").lower(), *LOOPBACK_NAMES, *(name.lower() for name in extra)}
    if bind in ("0.0.0.0", "::", ""):
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(names)


def host_name(header: bytes) -> str:
    """The name of a Host header, without its port: ``127.0.0.1:8000`` -> ``127.0.0.1``,
    ``[::1]:8000`` -> ``::1``."""
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def answer_declared_bodies_over_the_limit(app: FastAPI, limits: Limits, hosts: frozenset[str] | None = None) -> None:
    """Make ``app`` answer a request whose ``Content-Length`` is over ``limits.body_bytes`` with the
    JSON every other refusal is, before anything is read.

    Starlette's body limit (FastAPI's ``max_body_size``) answers such a request with its own plain
    text "Content Too Large", over any response of the application's, so it is answered in front of
    the whole middleware stack. A body that declares no length (sent in chunks) is cut by
    Starlette's limit as it arrives, and answered through ``http_error``. With ``hosts``, a request
    whose Host header names none of them is answered 421 there too (``allowed_hosts``)."""
    build = app.build_middleware_stack

    def build_middleware_stack():
        inner = build()

        async def declared_too_large(scope, receive, send) -> None:
            if scope["type"] == "http":
                headers = dict(scope.get("headers") or ())
                if hosts is not None and host_name(headers.get(b"host", b"")) not in hosts:
                    given = headers.get(b"host", b"").decode("latin-1")[:100]
                    refusal = error(
                        421,
                        f"Host: {given!r} is not a name of this server ({', '.join(sorted(hosts))}); "
                        "start it with attnseq serve --allowed-host NAME to answer to another",
                        "Host",
                    )
                    return await refusal(scope, receive, send)
                length = headers.get(b"content-length", b"")
                digits = length.lstrip(b"0")  # int() refuses 4,300 digits: so many are over any limit
                limit = limits.body_limit(scope.get("path", ""))
                if length.isdigit() and (len(digits) > 18 or int(digits or b"0") > limit):
                    return await too_large(limits, scope.get("path", ""))(scope, receive, send)
            await inner(scope, receive, send)

        return declared_too_large

    app.build_middleware_stack = build_middleware_stack


def create_app(
    runs: Sequence[LoadedRun],
    max_chars: int = MAX_CHARS,
    max_beam: int = MAX_BEAM,
    max_waiting: int = 1024,
    max_file_bytes: int = MAX_FILE_BYTES,
    hosts: frozenset[str] | None = None,
) -> FastAPI:
    """The application serving ``runs`` (the first is the default run of a request); with
    ``hosts`` (``allowed_hosts``) it answers only requests whose Host header names one of them."""
    if not runs:
        raise UserError("serve: give at least one run folder")
    for flag, value in (("--max-chars", max_chars), ("--max-beam", max_beam), ("--max-file-bytes", max_file_bytes)):
        if value < 1:
            raise UserError(f"serve {flag}: expected a number from 1, got {value}")
    files = any(not r.translator.pipeline.inputs.reads_text for r in runs)
    limits = Limits(max_chars, max_beam, max_file_bytes if files else 0)
    # FastAPI with /docs (Swagger UI) and /redoc served from the package, not a CDN: offline too
    app = FastAPIOffline(
        title="attnseq",
        version="1",
        lifespan=stop_workers,
        # a body in chunks is cut here; with a run of files, at the file's limit
        max_body_size=max(limits.body_bytes, limits.max_file_bytes),
        exception_handlers=ERROR_HANDLERS,
        description="Translate with attnseq runs and see what every model attends to.",
    )
    app.state.served = Served(
        runs={r.name: r for r in runs},
        workers={r.name: DecodeWorker(r.name, r.translator, renderer(r), max_waiting=max_waiting) for r in runs},
        limits=limits,
        infos=[run_payload(r.name, r.path, r.translator, max_beam) for r in runs],
    )
    answer_declared_bodies_over_the_limit(app, limits, hosts)
    app.include_router(routes)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
