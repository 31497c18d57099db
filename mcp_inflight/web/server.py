"""``mcp-inflight explore``: serve the explorer page and its JSON API on 127.0.0.1.

The server is the standard library's ``ThreadingHTTPServer``: the page is for one person on
their own machine, every answer is a small JSON document computed in a few milliseconds of
Python, and nothing here needs streaming or many connections, so an ASGI stack would add a
dependency path and an event loop without making a step faster.  It binds the loopback
interface only.

Routes (all ``GET``):

* ``/``: the page (``static/index.html``); its query string is the page's state (below);
* ``/static/NAME``: the page's script and style, served from the package;
* ``/api/meta``: designs, revisions, transports, the server's defaults, properties, fields;
* ``/api/view?QUERY``: the view of a path at a position (``views.view``);
* ``/api/traces?QUERY``: the counterexamples, witnesses and hazards of the configuration, from
  one exploration run in a child process (``"status": "queued" | "exploring" | "done"``);
* ``/api/recorded``: the recorded runtime traces opened so far (``--trace FILE``, or sent by
  the page), each with the paths of the runs that explain it (``views.recorded``).

The models page walks the declared models (lease, rounds, resume, tasks, subscriptions) the
same way (``declared_api``):

* ``/models``: the page (``static/models.html``); its query string is its state: ``model``,
  ``design``, each bound by name, ``path`` (tokens ``action.A.B`` joined by ``-``), ``at``;
* ``/api/models``: every declared model with its designs, mutants, bounds and hazards;
* ``/api/models/view?QUERY``: the state at a position of a path and the moves enabled there;
* ``/api/models/explore?QUERY``: the verdicts of one exploration of the model at that design
  and bounds, run as those of ``/api/traces`` are (queued, in a child process, with a state
  limit), each failing property with its shortest trace as a path.

and one ``POST``: ``/api/recorded?name=NAME`` with a trace of ``mcp-inflight record`` (JSON
Lines) as its body opens it; the answer is its entry in the list.

``QUERY``: ``design``, ``revision``, ``transport``, ``ids``, ``requests`` (the server's options
by default), ``path`` (moves joined by ``-``, each ``action.A`` or ``action.A.1``), ``at`` (the
position on the path, default its end), and ``trace`` (a label: which listed trace the path came
from).  A path is replayed through the model, so a URL opens the same step after a restart.
Errors are ``400`` with ``{"error": message, "step": n}``.

Who may ask: every request must name this server in its ``Host`` (``127.0.0.1``, ``localhost``
or ``[::1]`` with its port) and, when it carries an ``Origin``, come from the page itself; else
403 (a page elsewhere, or one reached through DNS rebinding, reads and changes nothing).  What
changes the server's state (opening a trace, queueing an exploration through
``/api/traces``) also carries the page's token in ``X-Explore-Token`` (the page has it from
``/``).  Budgets: a connection idle for ``SOCKET_TIMEOUT`` seconds is closed; a recorded
trace is checked in a child process that is ended after ``TRACE_BUDGET`` seconds or
``CHILD_MEMORY`` bytes, one at a time; an exploration is ended after ``EXPLORE_BUDGET``
seconds; at most ``MAX_QUEUED`` configurations wait to be explored (then 503).
"""

from __future__ import annotations

import argparse
import hmac
import json
import multiprocessing as mp
import os
import secrets
import signal
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_inflight.cli_common import DEFAULT_IDS, DEFAULT_REQUESTS
from mcp_inflight.web import declared_api, views
from mcp_inflight.web import model_api as api
from mcp_inflight.web.jobs import EXPLORE_BUDGET, Busy, Explorations

HOST = "127.0.0.1"
DEFAULT_PORT = 8731
#: The exploration behind the list of traces stops here (the largest default-bound run,
#: unguarded 2025-11-25 http at 2 ids and 3 instances, has about 2.0 million states); a run cut
#: short is shown as incomplete, with the traces it found.
MAX_STATES = 3_000_000

#: The largest recorded trace the page accepts from the browser.
MAX_TRACE_BYTES = 32 * 1024 * 1024
#: Seconds a connection may stay silent (headers, body, or between requests).
SOCKET_TIMEOUT = 30.0
#: Seconds the check of one recorded trace may take (its child process is ended then).
TRACE_BUDGET = 60.0
#: Bytes of memory a child process (a trace's check) may take.
CHILD_MEMORY = 2 * 1024 * 1024 * 1024
TOKEN_HEADER = "X-Explore-Token"

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


def _static(name: str) -> bytes | None:
    if "/" in name or name.startswith(".") or not any(name.endswith(x) for x in _TYPES):
        return None
    f = resources.files("mcp_inflight.web").joinpath("static", name)
    return f.read_bytes() if f.is_file() else None


def _limit_memory(limit: int | None) -> None:
    if limit is None:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not on this platform
        pass


def _check_child(name: str, text: str, memory: int | None, conn: Any) -> None:
    _limit_memory(memory)
    try:
        conn.send(("ok", views.recorded(name, text)))
    except views.BadRequest as e:
        conn.send(("bad", (str(e), e.step)))
    except MemoryError:
        conn.send(("bad", (f"{name}: checking the trace took more than its memory budget", None)))
    except BaseException as e:  # reported to the page, not lost with the process
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


class Handler(BaseHTTPRequestHandler):
    server: ExploreServer
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT  # the connection's socket timeout (the socketserver reads it)

    def setup(self) -> None:
        self.timeout = self.server.socket_timeout  # type: ignore[misc,assignment]  # per server
        super().setup()

    # headers and body go out as separate writes: with Nagle's algorithm on, the body waits
    # for the client's delayed acknowledgement (about 40 ms a step on Linux)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _refused(self, changes: bool) -> bool:
        """Answer 403 and say True unless the request names this server (Host), comes from
        its own page (Origin, when given) and, when it ``changes`` state, carries the token."""
        srv = self.server
        host = self.headers.get_all("Host") or []
        origins = self.headers.get_all("Origin") or []
        why = None
        if len(host) != 1 or host[0].lower() not in srv.hosts:
            why = "Host is not this server"
        elif len(origins) > 1 or (origins and origins[0].lower() not in srv.origins):
            why = "Origin not allowed"
        elif changes and not hmac.compare_digest(
            (self.headers.get(TOKEN_HEADER) or "").encode(), srv.token.encode()
        ):
            why = f"this needs the page's token ({TOKEN_HEADER})"
        if why is None:
            return False
        self.close_connection = True
        self._json(403, {"error": f"Forbidden: {why}"})
        return True

    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        srv = self.server
        if self._refused(url.path in ("/api/traces", "/api/models/explore")):
            return
        try:
            if url.path in ("/", "/models"):
                html = "index.html" if url.path == "/" else "models.html"
                page = (_static(html) or b"").replace(
                    b"<head>",
                    b'<head>\n<meta name="explore-token" content="' + srv.token.encode() + b'">',
                    1,
                )
                self._send(200, page, _TYPES[".html"])
            elif url.path.startswith("/static/"):
                name = url.path[len("/static/") :]
                body = _static(name)
                if body is None:
                    self._json(404, {"error": f"no static file {name!r}"})
                else:
                    self._send(200, body, _TYPES["." + name.rsplit(".", 1)[-1]])
            elif url.path == "/api/meta":
                self._json(200, views.meta(srv.defaults))
            elif url.path == "/api/view":
                self._json(200, views.view(q, srv.defaults))
            elif url.path == "/api/recorded":
                self._json(200, {"traces": srv.recorded_list()})
            elif url.path == "/api/models":
                self._json(200, {"models": declared_api.models(), "default": srv.model})
            elif url.path == "/api/models/view":
                self._json(200, declared_api.view(q))
            elif url.path == "/api/models/explore":
                job = declared_api.config_of(q)
                cfg = declared_api.describe_config(job)
                self._json(200, dict(srv.model_explorations.status(job), config=cfg))
            elif url.path == "/api/traces":
                cfg = views.config_of(q, srv.defaults)
                spec = (cfg.design.name, cfg.revision, cfg.transport, cfg.ids, cfg.requests)
                self._json(
                    200, dict(srv.explorations.status(spec), config=api.describe_config(cfg))
                )
            else:
                self._json(404, {"error": f"no route {url.path!r}"})
        except views.BadRequest as e:
            self._json(400, {"error": str(e), "step": e.step})
        except Busy as e:
            self._json(503, {"error": str(e)})
        except Exception as e:  # a model error is a defect: say so instead of hanging up
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})

    def do_POST(self) -> None:  # noqa: N802 (the base class's name)
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if self._refused(True):
            return
        try:
            length = int(self.headers.get("Content-Length") or -1)
        except ValueError:
            length = -1
        if url.path != "/api/recorded":
            self.close_connection = True
            self._json(404, {"error": f"no route {url.path!r}"})
            return
        if not 0 <= length <= MAX_TRACE_BYTES:
            self.close_connection = True
            self._json(
                413 if length > MAX_TRACE_BYTES else 411,
                {"error": f"a trace is sent with its Content-Length, at most {MAX_TRACE_BYTES}"},
            )
            return
        body = self.rfile.read(length)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            self._json(400, {"error": "the trace is not UTF-8", "step": None})
            return
        try:
            self._json(200, self.server.open_recorded(q.get("name") or "trace.jsonl", text))
        except views.BadRequest as e:
            self._json(400, {"error": str(e), "step": e.step})
        except Busy as e:
            self._json(503, {"error": str(e)})
        except Exception as e:
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})


class ExploreServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        port: int,
        defaults: dict,
        max_states: int | None = MAX_STATES,
        verbose: bool = False,
        trace_budget: float | None = TRACE_BUDGET,
        explore_budget: float | None = EXPLORE_BUDGET,
        socket_timeout: float | None = SOCKET_TIMEOUT,
        model: str | None = None,
    ):
        super().__init__((HOST, port), Handler)
        #: the declared model the models page opens on (None: the first)
        self.model = model
        self.socket_timeout = socket_timeout
        self.defaults = defaults
        self.verbose = verbose
        self.explorations = Explorations(max_states, explore_budget)
        self.model_explorations = Explorations(
            min(max_states or declared_api.MAX_STATES, declared_api.MAX_STATES),
            explore_budget,
            work=declared_api.explored,
        )
        self.trace_budget = trace_budget
        self.token = secrets.token_urlsafe(24)
        own = self.server_address[1]
        names = ("127.0.0.1", "localhost", "[::1]")
        self.hosts = {f"{n}:{own}" for n in names}
        self.origins = {f"http://{n}:{own}" for n in names}
        self._recorded: dict[str, dict] = {}
        self._recorded_lock = threading.Lock()
        self._checking = threading.Lock()  # one trace's check at a time

    def _check(self, name: str, text: str) -> dict:
        """``views.recorded`` in a child process within the trace budget (time and memory):
        a check over it is ended, whatever the trace makes it do."""
        if not self._checking.acquire(blocking=False):
            raise Busy("another trace is being checked; try again when it is done")
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_check_child,
            args=(name, text, CHILD_MEMORY, child),
            daemon=True,
            name="mcp-inflight-trace-check",
        )
        try:
            proc.start()
            child.close()
            budget = self.trace_budget
            if not parent.poll(budget):
                raise views.BadRequest(
                    f"{name}: checking the trace took more than its budget of {budget:g} s"
                )
            try:
                kind, payload = parent.recv()
            except (EOFError, OSError):
                kind, payload = "error", "the checking process ended without a result"
        finally:
            parent.close()
            if proc.is_alive():
                proc.kill()
            proc.join(5)
            self._checking.release()
        if kind == "bad":
            raise views.BadRequest(payload[0], payload[1])
        if kind == "error":
            raise RuntimeError(payload)
        return payload

    def open_recorded(self, name: str, text: str) -> dict:
        """Check a recorded trace and add it to the list (a name already taken by another
        trace gets a number; the same trace again keeps its entry)."""
        rec = self._check(name, text)
        with self._recorded_lock:
            base, n = rec["name"], 1
            while rec["name"] in self._recorded:
                if self._recorded[rec["name"]]["runs"] == rec["runs"]:
                    return self._recorded[rec["name"]]
                n += 1
                rec["name"] = f"{base} ({n})"
            self._recorded[rec["name"]] = rec
        return rec

    def recorded_list(self) -> list[dict]:
        with self._recorded_lock:
            return list(self._recorded.values())

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def close(self) -> None:
        self.explorations.close()
        self.model_explorations.close()
        self.server_close()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcp-inflight explore",
        description="Serve a page on 127.0.0.1 to walk the model's state space: start at the "
        "initial state or at any counterexample, witness or hazard the explorer "
        "finds, take any enabled action, see the state, the lifecycle of each "
        "request, every property's status and the path as a sequence diagram. "
        "The options choose the configuration the page opens on; the page can "
        "switch to any other.",
    )
    p.add_argument(
        "--model",
        default="session",
        choices=["session", *declared_api.MODELS],
        help="the model the page opens on: session (default), or a declared model, opened on "
        "the models page (/models)",
    )
    p.add_argument(
        "--design",
        default=None,
        help="design the page opens on (default: unguarded for the session model, whose "
        "designs are " + ", ".join(api.all_designs()) + "; the safe design for a declared "
        "model)",
    )
    p.add_argument(
        "--revision",
        default=api.revisions()[0],
        choices=api.revisions(),
        help=f"protocol revision (default: {api.revisions()[0]})",
    )
    p.add_argument(
        "--transport", default="http", choices=api.transports(), help="transport (default: http)"
    )
    p.add_argument(
        "--ids",
        type=int,
        default=DEFAULT_IDS,
        help=f"distinct request ids (default: {DEFAULT_IDS}, as check)",
    )
    p.add_argument(
        "--requests",
        type=int,
        default=DEFAULT_REQUESTS,
        help=f"request instances (default: {DEFAULT_REQUESTS}, as check)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default: {DEFAULT_PORT}; 0 picks a free one)",
    )
    p.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="FILE",
        help="a runtime trace recorded by 'mcp-inflight record' to list on the page, checked "
        "as 'mcp-inflight replay' checks it (repeatable; the page can open more)",
    )
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.add_argument(
        "--max-states",
        type=int,
        default=MAX_STATES,
        help=f"cut the exploration behind the trace list here (default: {MAX_STATES:,})",
    )
    p.add_argument(
        "--trace-budget",
        type=float,
        default=TRACE_BUDGET,
        metavar="SECONDS",
        help=f"end the check of a recorded trace after this long (default: {TRACE_BUDGET:g})",
    )
    p.add_argument(
        "--explore-budget",
        type=float,
        default=EXPLORE_BUDGET,
        metavar="SECONDS",
        help=f"end an exploration after this long (default: {EXPLORE_BUDGET:g})",
    )
    p.add_argument(
        "--socket-timeout",
        type=float,
        default=SOCKET_TIMEOUT,
        metavar="SECONDS",
        help=f"close a connection silent this long (default: {SOCKET_TIMEOUT:g})",
    )
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return p


def run(argv: list[str]) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    model_q: dict[str, str] = {}
    if args.model == "session":
        args.design = args.design or "unguarded"
        if args.design not in api.all_designs():
            p.error(f"--design: the session model has no design {args.design!r}")
    else:
        model_q = {"model": args.model, **({"design": args.design} if args.design else {})}
        try:
            declared_api.config_of(model_q)
        except views.BadRequest as e:
            p.error(f"--design: {e}")
        args.design = "unguarded"
    if not 1 <= args.ids <= views.MAX_IDS or not 1 <= args.requests <= views.MAX_REQUESTS:
        p.error(f"--ids must be 1..{views.MAX_IDS} and --requests 1..{views.MAX_REQUESTS}")
    defaults = {
        "design": args.design,
        "revision": args.revision,
        "transport": args.transport,
        "ids": args.ids,
        "requests": args.requests,
    }
    try:
        srv = ExploreServer(
            args.port,
            defaults,
            args.max_states,
            args.verbose,
            trace_budget=args.trace_budget,
            explore_budget=args.explore_budget,
            socket_timeout=args.socket_timeout,
            model=None if args.model == "session" else args.model,
        )
    except OSError as e:
        sys.stderr.write(f"mcp-inflight explore: cannot listen on {HOST}:{args.port}: {e}\n")
        return 1
    for path in args.trace:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            srv.open_recorded(os.path.basename(path), text)
        except (OSError, UnicodeDecodeError, views.BadRequest) as e:
            srv.close()
            sys.stderr.write(f"mcp-inflight explore: --trace {path}: {e}\n")
            return 2
    if not model_q:  # the page opened first starts exploring at once
        cfg = views.config_of({}, defaults)
        spec = (cfg.design.name, cfg.revision, cfg.transport, cfg.ids, cfg.requests)
        srv.explorations.status(spec)
    sys.stderr.write(f"mcp-inflight explore: listening on {srv.url}\n")
    page = srv.url
    if model_q:
        page = srv.url + "models?" + "&".join(f"{k}={v}" for k, v in model_q.items())
        srv.model_explorations.status(declared_api.config_of(model_q))
        sys.stderr.write(f"mcp-inflight explore: the {args.model} model: {page}\n")
    sys.stderr.flush()

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    if args.open:
        import webbrowser

        webbrowser.open(page)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.close()
    return 0
