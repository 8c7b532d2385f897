"""Commands on a repo folder, no cluster needed: `render`, `plan`, `gates`, `check`."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from gitgate.bundle.group import grouped
from gitgate.check import Case, Failure, Report, check_report
from gitgate.cli.flags import (
    adopt_flag,
    at_flag,
    bundle_flag,
    completes,
    gate_signer_flags,
    gate_trust_from,
    kube_flags,
    output_flag,
    path_arg,
    tool_flags,
    trust_from,
    verify_flags,
)
from gitgate.cli.kube import cluster_asked, cluster_from
from gitgate.cli.lock import chart_fetcher
from gitgate.errors import ConfigError, GitgateError, Reason
from gitgate.karmada.effective import member_view
from gitgate.model import Verdict
from gitgate.model.chartspec import LockedChart
from gitgate.output import console
from gitgate.output.checkreport import check_document, check_text, junit_xml
from gitgate.output.plantables import gates_document, gates_table, plan_document, plan_text
from gitgate.output.printers import Printable, show
from gitgate.output.renderdoc import render_document, render_yaml
from gitgate.passes.onepass import (
    ApplyOptions,
    Checkout,
    ClusterPort,
    plan_checkout,
    preview,
    read_records,
    selected,
)
from gitgate.plan import Plan
from gitgate.render.pipeline import render_repo
from gitgate.render.post import redact_secret
from gitgate.render.tools import find_tools
from gitgate.source.configinforce import config_in_force
from gitgate.source.gateguard import Review, review_checkout
from gitgate.source.lockhistory import LockHistory
from gitgate.source.signatures import Trust, head_signature, keyring_folder
from gitgate.timespec import parse_time


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    render = sub.add_parser("render", help="render every source of a repo into objects")
    path_arg(render)
    output_flag(render, "yaml", "json")
    bundle_flag(render)
    render.add_argument("--show-secrets", action="store_true",
                        help="print Secret values (redacted by default)")
    cluster_flag(render)
    tool_flags(render)
    render.set_defaults(func=cmd_render)

    plan = sub.add_parser("plan", help="what gitgate would do with each bundle, and why",
                          epilog="examples:\n  gitgate plan examples/repo\n"
                                 "  gitgate plan examples/repo --at 2026-12-24T18:00:00Z\n"
                                 "  gitgate plan examples/repo --kubeconfig karmada.config"
                                 "   (with the live diff)\n"
                                 "  gitgate plan examples/repo --exit-code   (CI: 2 when "
                                 "something would change)")
    path_arg(plan)
    output_flag(plan, "table", "wide", "json")
    verify_flags(plan, "fail unless HEAD is signed by an allowed key, as a verifying loop "
                       "requires")
    since_flag(plan)
    gate_signer_flags(plan, "since --since REV fails, as `run` with these flags judges it")
    bundle_flag(plan)
    at_flag(plan)
    cluster_flag(plan)
    plan.add_argument("--allow-mass-prune", action="store_true",
                      help="with --kubeconfig: show the deletes a pass run with "
                           "--allow-mass-prune would do")
    plan.add_argument("--exit-code", action="store_true",
                      help="exit 0 when nothing would change on the cluster, 2 when something "
                           "would be created, configured or deleted, 1 on any error (as "
                           "`kubectl diff`); compares with the cluster, so it reads "
                           "$KUBECONFIG when --kubeconfig is not given")
    adopt_flag(plan, "with --kubeconfig, show what `apply --adopt` would do")
    tool_flags(plan)
    kube_flags(plan, required=False, offline="offline: $KUBECONFIG is not read")
    plan.set_defaults(func=cmd_plan)

    gates = sub.add_parser("gates", help="every gate: active or not, what it covers, when next")
    path_arg(gates)
    output_flag(gates, "table", "json")
    completes(gates.add_argument("--bundle", help="only the gates that cover a bundle whose name "
                                                  "matches this glob"))
    at_flag(gates)
    tool_flags(gates)
    gates.set_defaults(func=cmd_gates)

    check = sub.add_parser("check", help="validate a repo for CI: render, gates, bundle.yaml",
                           epilog="examples:\n  gitgate check examples/repo\n"
                                  "  gitgate check examples/repo --junit report.xml")
    path_arg(check)
    check.add_argument("--junit", help="write a JUnit XML report to this file")
    output_flag(check, "text", "json")
    verify_flags(check, "one more case: HEAD must be signed by an allowed key, as a verifying "
                        "loop requires")
    since_flag(check)
    gate_signer_flags(check, "since --since REV fails the commit case (`UntrustedGates`), as "
                             "`run` with these flags judges it")
    tool_flags(check)
    check.set_defaults(func=cmd_check)


def since_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", metavar="REV",
                        help="judge HEAD as a loop that trusts REV would (in CI: the branch "
                             "this change merges into, e.g. origin/main): gitgate.yaml's "
                             "verify: and gates.signers are read from REV, and each change of "
                             "a freeze file after REV must be signed by a gate signer")


def repo_folder(args: argparse.Namespace) -> Path:
    root = Path(args.path)
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder; pass the repo (a folder) to {args.command}")
    if not (root / "gitgate.yaml").is_file():
        project = [m for m in PROJECT_MARKERS if (root / m).exists()]
        if project:
            console.warn(f"{root} holds {project[0]}: it looks like a code project, not a "
                         "gitgate repo (no gitgate.yaml); point at the folder of your "
                         "manifests, for example examples/repo")
        else:
            console.warn(f"{root} has no gitgate.yaml: every folder with YAML, a Chart.yaml or "
                         "a kustomization is taken as a source")
    return root


# files that say a folder is a program's source tree rather than a repo of manifests
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "go.mod", "package.json", "Cargo.toml",
                   "pom.xml")


def warn_if_empty(root: Path, plan: Plan) -> None:
    if not plan.bundles and not plan.problems:
        console.warn(f"no bundles found in {root}: gitgate looks for folders holding a "
                     "Chart.yaml, a kustomization.yaml or Kubernetes YAML (see gitgate.yaml "
                     "`paths`)")


def _checkout(args: argparse.Namespace, now: datetime, bundle_glob: str | None = None,
              cluster: ClusterPort | None = None, review: Review | None = None) -> Checkout:
    """The checkout planned at `now`; with a `review` (`--since`), charts are fetched by
    gitgate.yaml as the loop would keep it in force (`source.configinforce`)."""
    root = repo_folder(args)
    in_force = config_in_force(root, review) if review is not None else None
    return plan_checkout(root, find_tools(args.helm, args.kustomize), now,
                         bundle_glob=bundle_glob,
                         scope_of=cluster.scope_of if cluster is not None else None,
                         clusters=cluster,
                         inventories=read_records(cluster, args.instance)
                         if cluster is not None else None,
                         charts=chart_fetcher(cluster, in_force))


def _at(args: argparse.Namespace) -> datetime:
    return parse_time(args.at, "--at") if args.at else args.now()


def cluster_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", metavar="MEMBER",
                        help="what this member cluster runs: the objects with the overrides "
                             "Karmada applies for it (`clusters:` customizations and the "
                             "repo's override policies)")


def cmd_render(args: argparse.Namespace) -> int:
    result = render_repo(repo_folder(args), find_tools(args.helm, args.kustomize),
                         charts=chart_fetcher())
    found, lost = grouped(result.rendered, tenancy=result.discovery.config.tenancy,
                          scopes=result.scopes)
    chosen = set(selected([b.name for b in found], args.bundle))
    bundles = [b for b in found if b.name in chosen]
    if args.cluster:
        view = member_view(bundles, args.cluster)
        bundles = [replace(b, objects=tuple(view.objects.get(b.name, ()))) for b in bundles
                   if b.name in view.objects or b.failed]
        for note in dict.fromkeys(view.notes):
            console.warn(note)
    if not args.show_secrets:
        bundles = [replace(b, objects=tuple(redact_secret(o) for o in b.objects))
                   for b in bundles]
    sources = {b.source.path for b in bundles}
    claimed = [p for b in found for p in b.problems if p.reason == Reason.DUPLICATE_BUNDLE]
    problems = [p for p in dict.fromkeys((*result.problems, *lost, *claimed))
                if args.bundle is None or p.source in sources]
    show(args.output, Printable(lambda: render_document(bundles, problems),
                                own={"yaml": lambda: render_yaml(bundles)}))
    console.problems(problems, result.warnings)
    return 1 if problems else 0


EXIT_CHANGES = 2  # plan --exit-code: something would change


def cmd_plan(args: argparse.Namespace) -> int:
    if not args.exit_code:
        with keyring_folder("gitgate-review-") as keyrings:
            return _plan(args, keyrings)
    try:  # --exit-code: 2 says "changes", so every error is 1
        with keyring_folder("gitgate-review-") as keyrings:
            return _plan(args, keyrings)
    except GitgateError as exc:
        console.error(exc)
        return 1


def _plan(args: argparse.Namespace, keyrings: Path) -> int:
    trust, gates = trusts_from(args, keyrings)
    asked = args.kubeconfig or args.context or (args.exit_code and cluster_asked(args))
    cluster = cluster_from(args) if asked else None
    if cluster is None and args.exit_code:
        raise ConfigError("--exit-code says whether anything would change on the cluster: "
                          "pass --kubeconfig (or set KUBECONFIG)")
    if cluster is None and os.environ.get("KUBECONFIG"):
        console.warn("plan reads the repo only: $KUBECONFIG is set but not read; pass "
                     "--kubeconfig \"$KUBECONFIG\" to compare with what the cluster holds")
    review = since_review(args, trust, gates, keyrings)
    checkout = _checkout(args, _at(args), args.bundle, cluster, review)
    plan = checkout.plan
    warn_if_empty(Path(args.path), plan)
    changes = None
    if cluster is not None:
        options = ApplyOptions(now=plan.at, instance=args.instance, adopt=args.adopt,
                               allow_mass_prune=args.allow_mass_prune)
        # where each rollout and each sync with hooks is, and what is next; what would change
        seen, changes = preview(checkout, cluster, options, args.bundle)
        plan = seen.plan
    before = charts_before(args, checkout, plan)
    view = None
    if args.cluster:
        labels = _cluster_labels(cluster, args.cluster) if cluster is not None else None
        view = member_view([b.bundle for b in plan.bundles], args.cluster, labels)
    show(args.output, Printable(lambda: plan_document(plan, changes, view, before),
                                lambda wide: plan_text(plan, changes, view, wide=wide,
                                                       charts_before=before)))
    failed = changes is not None and any(c.failed for c in changes)
    failed = failed or any(item.verdict.verdict is Verdict.FAILED for item in plan.bundles)
    _head, failures, notes = provenance_review(args, trust, review)
    for line in notes:
        console.warn(line)
    for failure in failures:
        console.warn(failure.message)
    if plan.problems or plan.invalid_gates or failed or failures:
        return 1
    writes = changes is not None and any(c.changes_cluster for c in changes)
    return EXIT_CHANGES if args.exit_code and writes else 0


def charts_before(args: argparse.Namespace, checkout: Checkout,
                  plan: Plan) -> dict[str, tuple[LockedChart, ...]]:
    """Each chart-fetching bundle's locked charts at the revision plan compares it with: the
    one its record says is live (with --kubeconfig), else --since REV."""
    history = LockHistory(Path(args.path))
    records = checkout.inventories or {}
    found = {}
    for item in plan.bundles:
        if not item.bundle.source.options.locked:
            continue
        record = records.get(item.bundle.name)
        revision = record.applied_revision if record is not None else (args.since or "")
        locked = history.at(revision, item.bundle.source.path) if revision else None
        if locked is not None:
            found[item.bundle.name] = locked
    return found


def trusts_from(args: argparse.Namespace,
                keyrings: Path) -> tuple[Trust | None, Trust | None]:
    """The allowed signers and the gate signers the flags name, as `run` takes them."""
    gates = gate_trust_from(args, keyrings / "gates")
    if gates is not None and args.since is None:
        raise ConfigError("--gate-signers judges the freeze-file changes since the revision a "
                          "loop trusts: add --since REV (in CI: the branch this change merges "
                          "into, e.g. origin/main)")
    return trust_from(args, keyrings / "allowed"), gates


def since_review(args: argparse.Namespace, trust: Trust | None, gate_trust: Trust | None,
                 keyrings: Path) -> Review | None:
    """With --since REV: what a loop trusting REV makes of HEAD (None without --since)."""
    if args.since is None:
        return None
    return review_checkout(repo_folder(args), args.since, keyrings / "repo", trust,
                           gate_trust)


def provenance_review(args: argparse.Namespace, trust: Trust | None,
                      review: Review | None) -> tuple[str, list[Failure], list[str]]:
    """The checkout's HEAD judged as a loop would judge it: by the --verify-commits flags,
    and with --since REV by gitgate.yaml's `verify:` and `gates.signers` as REV has them (or
    the --gate-signers flags), and every freeze-file change after REV, by the loop's own rule.
    Returns HEAD, the failures, and what passed."""
    if review is None:
        if trust is None:
            return "", [], []
        alone = head_signature(repo_folder(args), trust)
        return alone.commit, [] if alone.trusted else [Failure(
            Reason.UNVERIFIED, f"{alone.said()}: a `gitgate run --verify-commits` would not "
            "apply it")], [alone.said()] if alone.trusted else []
    failures, notes = [], []
    signed, gates = review.signature, review.gates
    if signed is not None:
        if signed.trusted:
            notes.append(signed.said())
        else:
            failures.append(Failure(Reason.UNVERIFIED, f"{signed.said()}: a `gitgate run` that "
                                    f"trusts {args.since} would not apply it"))
    if gates is not None:
        if gates.refused:
            kept = (f"refuses {gates.head[:12]} and keeps {args.since} in force"
                    if gates.head_refused else "keeps the freeze files as they were")
            failures.append(Failure(Reason.UNTRUSTED_GATES, f"{gates.said()}: a `gitgate run` "
                                    f"that trusts {args.since} {kept}"))
        else:
            notes.append(f"{gates.said()}: every freeze-file change since {args.since} is "
                         "signed by a gate signer")
    return (signed.commit if signed else gates.head if gates else ""), failures, notes


def _cluster_labels(cluster: ClusterPort, name: str) -> dict[str, str] | None:
    """The member's labels from its Karmada Cluster object (None when it is not there)."""
    found = cluster.get("cluster.karmada.io/v1alpha1", "Cluster", "", name)
    if found is None:
        raise ConfigError(f"--cluster {name}: Karmada has no Cluster {name!r}")
    return dict((found.get("metadata") or {}).get("labels") or {})


def cmd_gates(args: argparse.Namespace) -> int:
    plan = _checkout(args, _at(args), args.bundle).plan
    if args.bundle is not None:
        chosen = {item.bundle.name for item in plan.bundles}
        plan = replace(plan, gates=tuple(s for s in plan.gates if chosen & set(s.covers)))
    show(args.output, Printable(lambda: gates_document(plan), lambda _wide: gates_table(plan)))
    return 1 if plan.invalid_gates else 0


def cmd_check(args: argparse.Namespace) -> int:
    with keyring_folder("gitgate-review-") as keyrings:
        return _check(args, keyrings)


def _check(args: argparse.Namespace, keyrings: Path) -> int:
    trust, gates = trusts_from(args, keyrings)
    review = since_review(args, trust, gates, keyrings)
    current = _checkout(args, args.now(), review=review)
    report = check_report(current.rendered, current.plan)
    head, failures, notes = provenance_review(args, trust, review)
    if head:  # one more case: the commit under test, signed and its freeze files trusted
        report = Report((Case("commit", head[:12], tuple(failures), note="; ".join(notes)),
                         *report.cases))
    if args.junit:
        Path(args.junit).write_text(junit_xml(report), encoding="utf-8")
    show(args.output, Printable(lambda: check_document(report), lambda _wide: check_text(report)))
    console.problems((), current.rendered.warnings)
    return 0 if report.ok else 1
