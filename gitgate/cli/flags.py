"""Flags several commands share, spelled and explained the same way everywhere."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from gitgate.apiserver.apierrors import MAX_ANSWER
from gitgate.cli import completers
from gitgate.endpoints.signin import TokenFile
from gitgate.errors import ConfigError
from gitgate.output.printers import DOCUMENT_FORMATS, printer
from gitgate.passes.onepass import MAX_CONCURRENCY
from gitgate.source.signatures import Trust
from gitgate.timespec import duration_flag


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every flag's help ends with its default (unless it says it already, or has none);
    descriptions and examples keep their line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (action.default not in (None, False, argparse.SUPPRESS) and "default" not in text
                and (action.option_strings or action.nargs in ("?", "*"))):
            text += " (default: %(default)s)"
        return text


def tool_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--helm", help="helm executable (default: $GITGATE_HELM, PATH, venv)")
    parser.add_argument("--kustomize",
                        help="kustomize or kubectl executable (default: $GITGATE_KUSTOMIZE, PATH)")


def at_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--at", help="evaluate gates at this RFC 3339 time (default: now)")


def bundle_flag(parser: argparse.ArgumentParser) -> None:
    completes(parser.add_argument("--bundle", help="only bundles whose name matches this glob"))


def completes(action: argparse.Action, *, gates: bool = False) -> argparse.Action:
    """Tab completes `action` with the repo's bundle names (and gate names with `gates`)."""
    action.completer = (completers.bundles_and_gates  # type: ignore[attr-defined]
                        if gates else completers.bundles)
    return action


def output_flag(parser: argparse.ArgumentParser, *choices: str) -> None:
    """`-o`; wherever `json` is offered, every format that prints the document is too (`yaml`,
    as kubectl)."""
    offered = [*choices, *(f for f in DOCUMENT_FORMATS if f not in choices and "json" in choices)]
    for name in offered:
        printer(name)  # a format the registry does not know is a mistake here, not at run time
    parser.add_argument("-o", "--output", choices=offered, default=offered[0],
                        help="output format: " + ", ".join(offered))


def path_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="the gitgate repo folder (holding gitgate.yaml)")


def kube_flags(parser: argparse.ArgumentParser, *, required: bool,
               offline: str = "$KUBECONFIG when set, else none") -> None:
    """`required`: the command always talks to the API server; else only when asked to
    (`offline` says when: `plan` only with the flag)."""
    connection_flags(parser, "$KUBECONFIG, ~/.kube/config, in-cluster" if required
                     else offline)
    parser.add_argument("--instance", default=os.environ.get("GITGATE_INSTANCE") or "default",
                        help="name of this gitgate when several share one API server "
                             "($GITGATE_INSTANCE)")


def adopt_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """`--adopt`: an instance belongs to the repo (and folder) that applies it."""
    parser.add_argument("--adopt", action="store_true",
                        help="take the --instance over from the repo or folder whose bundles "
                             "it holds (refused without it): " + what)


def connection_flags(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--kubeconfig",
                        help=f"kubeconfig of the Karmada API server (default: {default})")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--connect-timeout", default="5s",
                        help="how long to wait for a connection to the API server")
    parser.add_argument("--request-timeout", default="30s",
                        help="how long one request to the API server may take, from "
                             "connecting to the last byte of its answer (a watch: this "
                             "beyond its own length)")
    parser.add_argument("--max-answer-size", type=answer_size, default=MAX_ANSWER,
                        metavar="SIZE", help="the largest answer (or watch event) gitgate "
                        "reads from the API server, in bytes or with Ki, Mi, Gi (default: "
                        "64Mi)")


def write_flags(parser: argparse.ArgumentParser) -> None:
    """How `apply` and `run` write: conflicts, mass prunes, suspensions, concurrency."""
    parser.add_argument("--force-conflicts", action="store_true",
                        help="take over fields another field manager owns")
    parser.add_argument("--allow-mass-prune", action="store_true",
                        help="allow a pass to delete more than half of what gitgate manages")
    parser.add_argument("--suspension-timeout", default="30s",
                        help="how long to wait for Karmada to show a suspension before writing "
                             "a suspended bundle's templates (none are written if it does not)")
    parser.add_argument("--hook-timeout", default="10m",
                        help="how long one step of a bundle's hooks may take (a PreSync Job "
                             "to complete on every cluster, say) before the bundle fails "
                             "with HookFailed and its later steps are not written")
    parser.add_argument("--apply-concurrency", type=_concurrency, default=8,
                        help="API writes in flight at once inside each apply stage (stages, "
                             f"dependsOn and suspension-first still hold; 1 to {MAX_CONCURRENCY})")


_SIZE = re.compile(r"([0-9]+)\s*(Ki|Mi|Gi)?")
_SCALES = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}


def answer_size(text: str) -> int:
    """`--max-answer-size`: `65536`, `512Ki`, `64Mi`, `1Gi`; at least 64 KiB."""
    matched = _SIZE.fullmatch(text.strip())
    size = int(matched[1]) * _SCALES[matched[2]] if matched else 0
    if size < 1 << 16:
        raise argparse.ArgumentTypeError(f"must be a size of at least 64Ki (bytes, or with "
                                         f"Ki, Mi or Gi), not {text!r}")
    return size


def _concurrency(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_CONCURRENCY}, "
                                         f"not {text!r}")
    return value


def replica_identity(text: str) -> str:
    """`--identity`: a DNS label, so two names never fold into one Lease name."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a replica name: use lowercase letters, digits and '-' (at most "
            "63, starting and ending with a letter or digit), e.g. the pod's name")
    return text


def git_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", default=".", help="the gitgate repo folder (default: .)")
    parser.add_argument("--push", action="store_true", help="push the commit to origin")
    tool_flags(parser)


def read_secret_file(path: str, flag: str) -> bytes:
    """A secret passed as a file (webhook secret, token): its content without surrounding
    whitespace; a missing, unreadable or empty file is one ConfigError naming the flag."""
    try:
        secret = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({flag}): {exc.strerror or exc}") from None
    if not secret:
        raise ConfigError(f"{path} ({flag}) is empty")
    return secret


def verify_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """--verify-commits and the allowed signers (`what` says what verifying does here)."""
    parser.add_argument("--verify-commits", action="store_true",
                        help=what + " (needs --allowed-signers and/or --allowed-gpg-keys)")
    parser.add_argument("--allowed-signers", metavar="FILE",
                        help="SSH keys allowed to sign, in git's allowed-signers format "
                             "(`principal key`, as for gpg.ssh.allowedSignersFile)")
    parser.add_argument("--allowed-gpg-keys", metavar="FILE",
                        help="OpenPGP public keys allowed to sign (armored, as `gpg --export "
                             "--armor` writes them)")


def gate_signer_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """--gate-signers and --gate-gpg-keys (`what` says what they do here)."""
    parser.add_argument("--gate-signers", metavar="FILE",
                        help="SSH keys (allowed-signers format) who may change a freeze: a "
                             "change to a gate file, a PAUSE file or gitgate.yaml without one "
                             "of their signatures " + what)
    parser.add_argument("--gate-gpg-keys", metavar="FILE",
                        help="OpenPGP public keys who may change a freeze (armored)")


def trust_from(args: argparse.Namespace, home: Path) -> Trust | None:
    """The allowed signers of --verify-commits (their OpenPGP keys in a keyring of their own
    under `home`, so that the machine's keys never count); None without the flag."""
    if not args.verify_commits:
        if args.allowed_signers or args.allowed_gpg_keys:
            raise ConfigError("--allowed-signers and --allowed-gpg-keys take effect with "
                              "--verify-commits: add it")
        return None
    return Trust(Path(args.allowed_signers) if args.allowed_signers else None,
                 Path(args.allowed_gpg_keys) if args.allowed_gpg_keys else None, home)


def gate_trust_from(args: argparse.Namespace, home: Path) -> Trust | None:
    """The gate signers of --gate-signers / --gate-gpg-keys (None without them)."""
    if not (args.gate_signers or args.gate_gpg_keys):
        return None
    return Trust(Path(args.gate_signers) if args.gate_signers else None,
                 Path(args.gate_gpg_keys) if args.gate_gpg_keys else None, home)


def ui_flags(parser: argparse.ArgumentParser) -> None:
    """The web page's token and refresh (`run` and `ui`)."""
    parser.add_argument("--ui-token-file", metavar="FILE",
                        help="file holding a token the web page asks for (Authorization: "
                             "Bearer, or its sign-in form); without it the page is open to "
                             "whoever reaches the address")
    parser.add_argument("--ui-refresh", default="5s",
                        help="how often an open page refreshes itself")
    parser.add_argument("--ui-secure-cookies", action="store_true",
                        help="mark the sign-in cookie Secure (browsers send it over HTTPS "
                             "only): set it when the page is reached through a TLS proxy")


def secret_file(path: str | None, flag: str, what: str) -> TokenFile | None:
    """A secret file read again whenever it changes (None: no flag); checked once here, so a
    missing or empty file is a startup error. `what` names it in the log."""
    if not path:
        return None
    read_secret_file(path, flag)
    return TokenFile(Path(path), what)


def ui_settings(args: argparse.Namespace) -> tuple[TokenFile | None, int]:
    """The token file (None: no token; read again when it changes, and checked once here)
    and the refresh in whole seconds, from ui_flags."""
    token = secret_file(args.ui_token_file, "--ui-token-file", "the web page's token file")
    refresh = duration_flag(args.ui_refresh, "--ui-refresh").total_seconds()
    return token, max(1, int(refresh))
