"""`gitgate version` (also `--version`) and `gitgate completion SHELL`."""

from __future__ import annotations

import argparse
import platform

from gitgate import __version__
from gitgate.cli.flags import output_flag
from gitgate.errors import GitgateError
from gitgate.output import console
from gitgate.output.printers import Printable, show
from gitgate.render.tools import find_helm, find_kustomize


def versions(helm: str | None = None, kustomize: str | None = None) -> dict[str, str]:
    """gitgate's, the tools' it would render with, and Python's; a missing tool says so."""
    found = {"gitgate": __version__}
    try:
        found["helm"] = find_helm(helm)[1]
    except GitgateError as exc:
        found["helm"] = f"not found ({exc.message})"
    try:
        found["kustomize"] = find_kustomize(kustomize)[1]
    except GitgateError as exc:
        found["kustomize"] = f"not found ({exc.message})"
    found["python"] = platform.python_version()
    return found


class VersionAction(argparse.Action):
    """`gitgate --version`: the same text as `gitgate version`, then exit 0."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print gitgate's, helm's, kustomize's and Python's versions")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        console.out(version_text(versions()))
        parser.exit(0)


def version_text(found: dict[str, str]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in found.items())


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    version = sub.add_parser("version", help="print gitgate's, helm's, kustomize's and "
                                             "Python's versions")
    output_flag(version, "text", "json")
    version.add_argument("--helm", help="helm executable to report on")
    version.add_argument("--kustomize", help="kustomize or kubectl executable to report on")
    version.set_defaults(func=cmd_version)

    completion = sub.add_parser(
        "completion", help="print the shell completion script",
        description="Print a completion script for your shell (argcomplete).",
        epilog="examples:\n  source <(gitgate completion bash)\n"
               "  gitgate completion zsh > \"${fpath[1]}/_gitgate\"\n"
               "  gitgate completion fish > ~/.config/fish/completions/gitgate.fish")
    completion.add_argument("shell", choices=["bash", "zsh", "fish"], help="your shell")
    completion.set_defaults(func=cmd_completion)


def cmd_version(args: argparse.Namespace) -> int:
    found = versions(args.helm, args.kustomize)
    show(args.output, Printable(lambda: found, lambda _wide: version_text(found)))
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    console.out(shellcode(["gitgate"], shell=args.shell))
    return 0
