"""`solar server start|run|status|stop` (docs/server.md).

    solar server start [--idle MIN]   a server in the background; returns once it listens
    solar server run [--idle MIN]     the same in the foreground (its log on stderr)
    solar server status [--all]       this environment's server (exit 0), or none (exit 1)
    solar server stop [--all]         ends it once its running commands have ended
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import _core
from ..errors import command, parse_args
from . import client, daemon, place, wire

_NOT_RUNNING = 1  # `status` and `stop` when no server runs


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:  # also NaN
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, its errors in one line (docs/cli.md): `solar: error: server: ...`."""

    def error(self, message: str):
        sys.stderr.write(f"solar: error: server: {message} (`solar server --help`)\n")
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="solar server",
        description="Keep Solar, torch, JAX and transformers imported in a server that runs "
                    "later `solar` commands of this installation and environment "
                    "(docs/server.md).")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION",
                                parser_class=_Parser)
    for name, help_text in (("start", "start a server in the background"),
                            ("run", "run a server in the foreground")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--idle", type=_positive, default=30.0, metavar="MIN",
                       help="end after MIN minutes without a command (default 30)")
        if name == "start":
            p.add_argument("--wait", type=_positive, default=300.0, metavar="SEC",
                           help="how long to wait for it to listen (default 300)")
    for name, help_text in (("status", "show this environment's server"),
                            ("stop", "end this environment's server")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--all", action="store_true",
                       help="every server of this user, whatever its environment")
    return parser


def _ask(path: str, op: str, timeout: float = 10.0) -> Optional[Dict[str, Any]]:
    sock = client.connect(path, timeout)
    if sock is None:
        return None
    with sock:
        try:
            wire.send(sock, {"op": op})
            return wire.receive(sock)[0]
        except (OSError, wire.WireError):
            return None


def _describe(s: Dict[str, Any]) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["started"]))
    imported = ", ".join(k for k, v in s["preloaded"].items() if v == "imported") or "nothing"
    return (f"pid {s['pid']}, started {started}, {s['served']} command(s) served, "
            f"{s['running']} running, imported {imported}, ends after "
            f"{s['idle_limit'] / 60:g} min idle; socket {s['socket']}")


def _sockets(everyone: bool) -> List[str]:
    try:
        directory = place.checked_folder(create=False)
    except FileNotFoundError:  # (a folder that is unsafe: PlaceError, exit 3)
        return []
    if everyone:
        return sorted(glob.glob(os.path.join(directory, "*.sock")))
    path = place.socket_path(place.key(), directory)
    return [path] if path else []


def _answers(op: str, everyone: bool) -> List[Dict[str, Any]]:
    """The replies to `op` of this environment's server (or of every server of this user)."""
    return [s for s in (_ask(p, op) for p in _sockets(everyone)) if s is not None]


def _status(everyone: bool) -> int:
    found = _answers("status", everyone)
    for s in found:
        print(f"solar server: running ({_describe(s)})")
    if not found:
        others = 0 if everyone else len(_answers("status", True))
        print("solar server: none running" if everyone else
              "solar server: none running for this installation and environment" +
              (f" ({others} of another installation or environment: `solar server status "
               "--all`)" if others else ""))
    return 0 if found else _NOT_RUNNING


def _stop(everyone: bool) -> int:
    stopped = _answers("stop", everyone)
    for s in stopped:
        left = f"; it ends when its {s['running']} running command(s) end" \
            if s["running"] else ""
        print(f"solar server: stopping pid {s['pid']}{left}")
    if not stopped:
        print("solar server: none running")
    return 0 if stopped else _NOT_RUNNING


def _run(idle_minutes: float, run_command: Callable[[List[str]], int],
         preload: Callable[[], Dict[str, str]]) -> int:
    t0 = time.perf_counter()
    try:
        server = daemon.bind(idle_minutes * 60, preload)
    except daemon.AlreadyRunning as e:
        print(f"solar server: one is already running or starting for this environment ({e})")
        return 0
    imported = [k for k, v in server.preloaded.items() if v == "imported"]
    sys.stderr.write(f"solar server: pid {os.getpid()} listening on {server.path}; imported "
                     f"{', '.join(imported) or 'nothing'} in {time.perf_counter() - t0:.1f} s\n")
    sys.stderr.flush()
    daemon.serve(server, run_command)
    sys.stderr.write(f"solar server: pid {os.getpid()} ended after {server.served} command(s)\n")
    return 0


def _start(idle_minutes: float, wait: float) -> int:
    directory = place.checked_folder(create=True)
    path = place.usable_socket_path(place.key(), directory)
    s = _ask(path, "status")
    if s is not None:
        print(f"solar server: already running ({_describe(s)})")
        return 0
    log_path = path[: -len(".sock")] + ".log"
    with open(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        # The interpreter's flags are part of the key: the server starts with the same.
        argv = [sys.executable, *subprocess._args_from_interpreter_flags(),  # noqa: SLF001
                "-m", "solar", "server", "run", "--idle", str(idle_minutes)]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env=dict(os.environ))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        s = _ask(path, "status")
        if s is not None:
            print(f"solar server: started ({_describe(s)})")
            return 0
        code = proc.poll()
        if code:  # (0: another start's server holds the lock; its socket comes soon)
            sys.stderr.write(f"solar: error: {log_path}: the server ended with code {code} "
                             f"before it listened: {_last_line(log_path)}\n")
            return code
        time.sleep(0.05)
    sys.stderr.write(f"solar: error: {log_path}: no server listened within {wait:g} s "
                     "(its log)\n")
    return _core.EXIT_CODES["internal"]


def _last_line(path: str) -> str:
    """The last line the server wrote to its log (what ended it)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[-1] if lines else "its log is empty"


@command()
def main(args: Sequence[str], run_command: Callable[[List[str]], int],
         preload: Callable[[], Dict[str, str]]) -> int:
    """`solar server ACTION ...`; the server's children run run_command(argv) (the console
    script's main), after preload() (solar.programs.preload)."""
    ns = parse_args(_parser(), args)
    try:
        if ns.action == "start":
            return _start(ns.idle, ns.wait)
        if ns.action == "run":
            return _run(ns.idle, run_command, preload)
        if ns.action == "status":
            return _status(ns.all)
        return _stop(ns.all)
    except place.PlaceError as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return _core.EXIT_CODES["io"]
