"""`gitgate ui`: the loop's read-only web page on this machine, read from the records a
running loop keeps on the API server (no repo, no loop needed here)."""

from __future__ import annotations

import argparse
import signal
import threading

from gitgate.cli.flags import kube_flags, ui_flags, ui_settings
from gitgate.cli.kube import cluster_from, kubeconfig_choice
from gitgate.endpoints.routes import LoopEndpoints
from gitgate.endpoints.server import EndpointServer, parse_listen
from gitgate.output import console
from gitgate.output.webui import ApiSource, WebUi


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ui = sub.add_parser(
        "ui", help="serve the read-only web page from the API server's records",
        epilog="examples:\n  gitgate ui --kubeconfig karmada.config\n"
               "  gitgate ui --kubeconfig karmada.config --listen 127.0.0.1:9000 "
               "--ui-token-file token")
    ui.add_argument("--listen", default="127.0.0.1:8081",
                    help="HOST:PORT to serve the page on (loopback unless you say otherwise)")
    ui_flags(ui)
    kube_flags(ui, required=True)
    ui.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    listen = parse_listen(args.listen)
    token, refresh = ui_settings(args)
    cluster = cluster_from(args)
    origin = f"the API server of {kubeconfig_choice(args.kubeconfig).said()}"
    source = ApiSource(cluster, args.instance, args.now, origin, refresh)
    server = EndpointServer(listen, LoopEndpoints(
        ready=lambda: True, status=lambda: {}, metrics=lambda: b"", trigger=lambda: None,
        webhook_secret=None, pages=WebUi(source.as_source(), token,
                                         secure_cookies=args.ui_secure_cookies).routes())).start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    console.progress(f"gitgate ui: http://{listen[0]}:{server.port}/ui/ (Ctrl-C to stop)")
    try:
        stopped.wait()
    finally:
        server.stop()
    return 0
