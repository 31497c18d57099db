"""Workers of ``mcp-inflight serve --redis URL``, each on a port of its own, forked from one
process (the imports are paid once): ``python redis_pool.py N [serve options]``.  Each worker
prints ``pool worker PID listening on URL``; the serve's own ``worker NAME ready`` follows.
SIGTERM stops them all.  The tests pick the worker of each request by its port.  With
``--trace FILE`` worker k writes its wire trace to ``FILE.k``."""

from __future__ import annotations

import os
import signal
import sys

from mcp_inflight.serve import _parser, demo_server
from mcp_inflight.serve_http import _listen, _run_loop, _serve_http


def main() -> None:
    n = int(sys.argv[1])
    args = _parser().parse_args(["--port", "0", *sys.argv[2:]])
    server = demo_server()
    socks = [_listen(args) for _ in range(n)]
    children = []
    for k, sock in enumerate(socks):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if args.trace:  # one trace file per worker: TRACE.0, TRACE.1, ...
                args.trace = f"{args.trace}.{k}"
            port = sock.getsockname()[1]
            line = f"pool worker {os.getpid()} listening on http://127.0.0.1:{port}{args.path}\n"
            os.write(2, line.encode())  # one write: the workers' lines do not interleave
            code = 0
            try:
                _run_loop(_serve_http(server, args, sock))
            except BaseException:  # noqa: BLE001
                code = 1
            os._exit(code)
        children.append(pid)

    def stop(signum, frame):
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return
        except InterruptedError:
            continue


if __name__ == "__main__":
    main()
