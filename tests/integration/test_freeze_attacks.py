"""Attacks on the freeze: commits, and sequences of commits, by someone with push rights to
one folder (or one tenant), a careless user or a flaky network, that would write or delete
an object of a held bundle, a template of a suspended one, or what acts on or around them,
without touching a freeze file. Through the real CLI (or the loop, for the mid-pass cases)
against the API emulator. Each test asserts the safe outcome; the name says the attack. An
attack found open is marked `xfail(strict=True)`, saying where its fix belongs: it fails the
suite the day it is fixed, so the mark goes with the fix."""

from __future__ import annotations

import json
import textwrap

import pytest

from gitgate.cli import main
from gitgate.karmada.policy import policy_name
from tests.conftest import write_files
from tests.support.manifests import cm, db_image_override, deployment

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def emulated(kube):
    """What gitgate sent is read from the emulator's request log (the CLI talks to the API
    server with a client of its own); a real API server keeps no such log."""
    if kube.emulator is None:
        pytest.skip("reads the API emulator's request log (GITGATE_TEST_KUBECONFIG is set)")

PLACEMENT = "defaults: {placement: {clusterAffinity: {clusterNames: [member1, member2]}}}\n"
POLICY_API = "policy.karmada.io/v1alpha1"


def run_json(capsys, kube, root, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    if kube.emulator is not None:
        kube.emulator.state.requests.clear()
    code = main(["apply", str(root), "--kubeconfig", kube.kubeconfig, "--instance",
                 kube.run_id, "-o", "json", *extra])
    out = capsys.readouterr().out
    try:
        return code, json.loads(out)
    except json.JSONDecodeError:
        return code, {"raw": out}


def by_name(doc: dict) -> dict[str, dict]:
    return {b["name"]: b for b in doc.get("bundles", [])}


def writes(kube, fragment: str) -> list[tuple[str, str]]:
    """Writes (apply or delete) whose path contains `fragment`, in the last command."""
    return [(r.method, r.path) for r in kube.emulator.state.requests
            if r.is_write and fragment in r.path]


def live(kube, api: str, kind: str, ns: str, name: str):
    return kube.cluster.get(api, kind, ns, name)


def gate(name: str, spec: str) -> dict[str, str]:
    return {f"gates/{name}.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                                  f"metadata: {{name: {name}}}\nspec: {spec}\n"}


def override(ns: str, image: str) -> str:
    return db_image_override(ns, image)


def live_override_image(kube, ns: str) -> str | None:
    policy = live(kube, POLICY_API, "OverridePolicy", ns, "db-image")
    if policy is None:
        return None
    return policy["spec"]["overrideRules"][0]["overriders"]["plaintext"][0]["value"]


# ------------------------------------------------------------------------------------------
# What is held with a frozen bundle (an override acting on it, what its workloads use,
# the Namespace or CRD its objects live in) stays held whatever the frozen bundle's commit
# renames, relabels or empties.
# ------------------------------------------------------------------------------------------

@pytest.fixture
def db_and_platform(tmp_path, kube, capsys):
    """apps/db (a Deployment, labelled team=db) and platform/ (an OverridePolicy acting on
    it at db:2), applied once."""
    ns = kube.ns("db")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/db/bundle.yaml": "labels: {team: db}\n",
        "apps/db/app.yaml": deployment("db", ns, "db:1", config="db-config")
        + cm("db-config", ns, "v1"),
        "platform/bundle.yaml": "name: platform\n",
        "platform/override.yaml": override(ns, "db:2"),
    })
    code, doc = run_json(capsys, kube, root)
    assert code == 0, doc
    assert live_override_image(kube, ns) == "db:2"
    return root, ns


@pytest.mark.parametrize("escape", ["label-dropped", "renamed", "emptied"])
def test_A1_override_acting_on_a_held_bundle_escapes_when_the_bundle_sheds_its_identity(
        db_and_platform, kube, capsys, escape):
    """A label gate holds apps/db; the platform's edit to the override acting on it is held
    with it. Then apps/db's own folder drops the label (or renames the bundle): apps/db stays
    held (its record), but the held override edit goes out to member2."""
    root, ns = db_and_platform
    write_files(root, {**gate("db", "{selector: {matchLabels: {team: db}}, reason: db freeze}"),
                       "platform/override.yaml": override(ns, "db:3")})
    code, doc = run_json(capsys, kube, root)
    assert live_override_image(kube, ns) == "db:2"  # held with apps-db: correct
    # the attack: a commit in apps/db alone, touching no freeze file
    if escape == "label-dropped":
        write_files(root, {"apps/db/bundle.yaml": "labels: {team: none}\n"})
    elif escape == "renamed":
        write_files(root, {"apps/db/bundle.yaml": "name: db2\nlabels: {team: none}\n"})
    else:  # the folder emptied of its manifests: apps-db is kept live by its record
        (root / "apps/db/app.yaml").unlink()
        (root / "apps/db/bundle.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    bundles = by_name(doc)
    held_name = {"label-dropped": "apps-db", "renamed": "db2", "emptied": "apps-db"}[escape]
    assert bundles[held_name]["verdict"] in ("held", "failed"), bundles[held_name]
    assert live(kube, "apps/v1", "Deployment", ns, "db") is not None
    # the promise: nothing acting on the held bundle is written
    assert writes(kube, "/overridepolicies/db-image") == [], bundles["platform"]
    assert live_override_image(kube, ns) == "db:2"


@pytest.fixture
def web_and_config(tmp_path, kube, capsys):
    """apps/web: a Deployment using ConfigMap web-config, which apps/config defines."""
    ns = kube.ns("web")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/web/bundle.yaml": "labels: {team: web}\n",
        "apps/web/app.yaml": deployment("web", ns, "web:1"),
        "apps/config/app.yaml": cm("web-config", ns, "v1"),
    })
    code, doc = run_json(capsys, kube, root)
    assert code == 0, doc
    return root, ns


@pytest.mark.parametrize("escape", ["label-dropped", "renamed", "render-broken", "emptied"])
def test_A2_config_a_held_workload_uses_escapes_when_the_workload_sheds_its_identity(
        web_and_config, kube, capsys, escape):
    """A held workload holds the ConfigMaps it uses, even in another bundle. apps/web drops
    its label (or renames itself): it stays held through its record, but the ConfigMap it
    uses is written."""
    root, ns = web_and_config
    write_files(root, {**gate("web", "{selector: {matchLabels: {team: web}}, "
                                     "reason: web freeze}"),
                       "apps/config/app.yaml": cm("web-config", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert live(kube, "v1", "ConfigMap", ns, "web-config")["data"]["value"] == "v1"
    if escape == "label-dropped":
        write_files(root, {"apps/web/bundle.yaml": "labels: {team: none}\n"})
    elif escape == "renamed":
        write_files(root, {"apps/web/bundle.yaml": "name: web2\n"})
    elif escape == "render-broken":  # the held bundle's folder made to fail to render
        write_files(root, {"apps/web/broken.yaml": "kind: [unclosed\n"})
    else:  # emptied: the Deployment stays live through apps-web's record alone
        (root / "apps/web/app.yaml").unlink()
        (root / "apps/web/bundle.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/web-config") == [], by_name(doc)
    assert live(kube, "v1", "ConfigMap", ns, "web-config")["data"]["value"] == "v1"


# ------------------------------------------------------------------------------------------
# A held bundle's objects as they are live, not as its commit renders them (or no longer
# renders them): a Karmada policy is judged against the labels its record keeps of them,
# a used object against what its workloads used; what a record does not say reaches.
# ------------------------------------------------------------------------------------------

RECORDS = ("gitgate.io", "bundles", "gitgate-system")


def labelled_db(ns: str, tier: str) -> str:
    return deployment("db", ns, "db:1", config="db-config").replace(
        f"metadata: {{name: db, namespace: {ns}}}",
        f"metadata: {{name: db, namespace: {ns}, labels: {{tier: {tier}}}}}", 1)


def policy(kind: str, ns: str, selector: str, value: str) -> str:
    """A Karmada policy of `kind` in platform/ whose resourceSelectors are `selector`."""
    namespace = "" if kind.startswith("Cluster") else f", namespace: {ns}"
    if kind.endswith("PropagationPolicy"):
        rest = "  placement: {clusterAffinity: {clusterNames: [member2]}}\n"
    else:
        rest = ("  overrideRules:\n    - targetCluster: {clusterNames: [member2]}\n"
                "      overriders: {plaintext: [{path: /spec/replicas, operator: replace, "
                f"value: {value}}}]}}\n")
    return (f"apiVersion: {POLICY_API}\nkind: {kind}\nmetadata: {{name: reach{namespace}}}\n"
            f"spec:\n  resourceSelectors: [{selector}]\n{rest}")


@pytest.fixture
def paused_db(tmp_path, kube, capsys):
    """apps/db: a Deployment labelled tier=db (and its ConfigMap), applied, then paused."""
    ns = kube.ns("reach")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/db/app.yaml": labelled_db(ns, "db") + cm("db-config", ns, "v1"),
        "platform/bundle.yaml": "name: platform\n",
        "platform/keep.yaml": cm("platform-keep", ns, "v1"),
    })
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/db/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    return root, ns


REACHING = {  # kind, selector
    "by-label": ("OverridePolicy", "{apiVersion: apps/v1, kind: Deployment, "
                                   "labelSelector: {matchLabels: {tier: db}}}"),
    "every-deployment": ("OverridePolicy", "{apiVersion: apps/v1, kind: Deployment}"),
    "cluster-wide": ("ClusterOverridePolicy", "{apiVersion: apps/v1, kind: Deployment, "
                                              "namespace: NS, name: db}"),
    "propagation": ("PropagationPolicy", "{apiVersion: apps/v1, kind: Deployment, name: db}"),
}


@pytest.mark.parametrize("how", sorted(REACHING))
def test_A4_a_policy_reaching_an_emptied_paused_bundle_waits_with_it(paused_db, kube, capsys,
                                                                     how):
    """apps/db's folder is emptied but for its `PAUSE` (its objects stay live through its
    record); in the same commit platform/ adds a Karmada policy that reaches its Deployment
    by label, by kind, cluster-wide, or a PropagationPolicy that would take it over. Nothing
    of it may be written while the pause stands."""
    root, ns = paused_db
    kind, selector = REACHING[how]
    (root / "apps/db/app.yaml").unlink()
    write_files(root, {"platform/reach.yaml": policy(kind, ns, selector.replace("NS", ns), "5")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/reach") == [], by_name(doc).get("platform")
    assert live(kube, "apps/v1", "Deployment", ns, "db") is not None
    write_files(root, {"apps/db/app.yaml": labelled_db(ns, "db") + cm("db-config", ns, "v1")})
    (root / "apps/db/PAUSE").unlink()  # lifted, the policy goes out with the bundle
    code, doc = run_json(capsys, kube, root)
    if how != "propagation":  # a policy taking over another bundle's objects fails there
        assert writes(kube, "/reach"), by_name(doc).get("platform")


def test_A5_a_label_override_escapes_when_the_held_bundle_relabels_its_object(
        paused_db, kube, capsys):
    """An override acts on apps/db's Deployment by its label tier=db. The paused bundle's
    commit relabels the Deployment (tier=none) and the override's edit goes in with it:
    judged against the commit, the override acts on nothing held; live, the Deployment is
    still tier=db, so the edit would reach the paused bundle."""
    root, ns = paused_db
    selector = REACHING["by-label"][1]
    (root / "apps/db/PAUSE").unlink()
    write_files(root, {"platform/reach.yaml": policy("OverridePolicy", ns, selector, "2")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/db/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/db/app.yaml": labelled_db(ns, "none") + cm("db-config", ns, "v1"),
                       "platform/reach.yaml": policy("OverridePolicy", ns, selector, "7")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/overridepolicies/reach") == [], by_name(doc)["platform"]
    rules = live(kube, POLICY_API, "OverridePolicy", ns, "reach")["spec"]["overrideRules"]
    assert rules[0]["overriders"]["plaintext"][0]["value"] == 2


def test_A6_an_override_removed_while_it_acts_on_an_emptied_paused_bundle_stays(
        paused_db, kube, capsys):
    """Removing an override changes what its bundle runs as editing it does: with apps/db
    emptied under its `PAUSE`, the override acting on its Deployment stays live."""
    root, ns = paused_db
    (root / "apps/db/PAUSE").unlink()
    write_files(root, {"platform/reach.yaml": policy("OverridePolicy", ns,
                                                     REACHING["by-label"][1], "2")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/db/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    (root / "apps/db/app.yaml").unlink()
    (root / "platform/reach.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/overridepolicies/reach") == [], by_name(doc)["platform"]
    assert live(kube, POLICY_API, "OverridePolicy", ns, "reach") is not None


@pytest.mark.parametrize("narrowed", ["other-name", "other-label"])
def test_A8_an_override_narrowed_away_from_a_held_bundle_waits_with_it(
        db_and_platform, kube, capsys, narrowed):
    """A gate holds apps/db; platform/ narrows the override acting on its Deployment so that
    it selects something else. Judged by its new version it acts on nothing held, but
    writing it takes the override off the held bundle's members."""
    root, ns = db_and_platform
    write_files(root, gate("db", "{bundles: [apps-db], reason: db freeze}"))
    assert run_json(capsys, kube, root)[0] == 0
    selector = ("name: other}" if narrowed == "other-name"
                else "labelSelector: {matchLabels: {tier: other}}}")
    write_files(root, {"platform/override.yaml": override(ns, "db:2").replace(
        "name: db}", selector)})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/overridepolicies/db-image") == [], by_name(doc)["platform"]
    policy_now = live(kube, POLICY_API, "OverridePolicy", ns, "db-image")
    assert policy_now["spec"]["resourceSelectors"][0].get("name") == "db"


def test_A7_a_record_that_does_not_say_its_labels_or_uses_holds_all_it_could(
        paused_db, kube, capsys):
    """A record an earlier release wrote keeps no labels and no uses: apps/db emptied under
    its `PAUSE`, an override selecting by a label the Deployment does not have, and a change
    to a ConfigMap its Deployment does not use, both wait (and say why)."""
    root, ns = paused_db
    stored = kube.emulator.state.objects[(*RECORDS, f"{kube.run_id}.apps-db")]
    for entry in stored.obj["status"]["objects"]:
        entry.pop("labels", None)
        entry.pop("uses", None)
    (root / "apps/db/app.yaml").unlink()
    write_files(root, {
        "platform/reach.yaml": policy("OverridePolicy", ns, (
            "{apiVersion: apps/v1, kind: Deployment, labelSelector: "
            "{matchLabels: {tier: web}}}"), "5"),
        "platform/keep.yaml": cm("platform-keep", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/overridepolicies/reach") == [], by_name(doc)["platform"]
    assert writes(kube, "/configmaps/platform-keep") == [], by_name(doc)["platform"]
    capsys.readouterr()
    main(["plan", str(root), "--kubeconfig", kube.kubeconfig, "--instance", kube.run_id,
          "-o", "json"])
    plan = by_name(json.loads(capsys.readouterr().out))["platform"]
    said = " ".join(r["reason"] for r in plan["reasons"])
    assert "does not say its labels" in said and "does not say what it uses" in said, said
    assert "frozen bundle apps-db" in said and "apps/db/PAUSE" in {
        r["file"] for r in plan["reasons"]}, plan["reasons"]


# ------------------------------------------------------------------------------------------
# `--bundle GLOB` and `run --shard`: a held bundle outside the pass's scope still claims
# its objects.
# ------------------------------------------------------------------------------------------

@pytest.fixture
def two(tmp_path, kube, capsys):
    ns = kube.ns("two")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v1"),
        "apps/h/app.yaml": cm("h", ns, "v1"),
    })
    code, doc = run_json(capsys, kube, root)
    assert code == 0, doc
    return root, ns


def test_B0_full_pass_refuses_to_prune_what_a_held_bundle_claims(two, kube, capsys):
    root, ns = two
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/moving") == []
    assert by_name(doc)["apps-a"]["reason"] == "Frozen"


def test_B1_bundle_glob_prunes_what_a_held_bundle_claims(two, kube, capsys):
    """The same commit, applied with `--bundle apps-a`: the held bundle apps-h is outside the
    scope, so nothing says it claims `moving`; apps-a deletes it."""
    root, ns = two
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1")})
    code, doc = run_json(capsys, kube, root, "--bundle", "apps-a")
    assert writes(kube, "/configmaps/moving") == [], by_name(doc)
    assert live(kube, "v1", "ConfigMap", ns, "moving") is not None


def test_B2_bundle_glob_prunes_a_gone_bundle_whose_objects_a_held_bundle_claims(
        two, kube, capsys):
    """apps/a leaves Git; its ConfigMap `moving` now lives in held apps/h. The full pass keeps
    apps-a; `--bundle apps-a` deletes `moving`."""
    root, ns = two
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    (root / "apps/a/app.yaml").unlink()
    write_files(root, {"apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1")
                       + cm("a", ns, "v1")})
    code, doc = run_json(capsys, kube, root, "--bundle", "*[!h]")  # ns and apps-a, not apps-h
    assert code != 2, doc
    assert writes(kube, "/configmaps/moving") == [], doc
    assert live(kube, "v1", "ConfigMap", ns, "moving") is not None


def test_A3_a_held_workloads_config_is_pruned_when_its_own_folder_drops_it(
        web_and_config, kube, capsys):
    """apps/web (held) uses web-config from apps/config. apps/config's folder removes it
    (apps/config keeps another object, so it is an open bundle with a leftover): web-config is
    deleted under the held Deployment."""
    root, ns = web_and_config
    write_files(root, {**gate("web", "{bundles: [apps-web], reason: web freeze}")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/config/app.yaml": cm("other", ns, "v1")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/web-config") == [], by_name(doc)
    assert live(kube, "v1", "ConfigMap", ns, "web-config") is not None


def test_A3b_a_held_workloads_config_is_pruned_when_its_bundle_leaves_git(
        web_and_config, kube, capsys):
    root, ns = web_and_config
    write_files(root, {**gate("web", "{bundles: [apps-web], reason: web freeze}")})
    assert run_json(capsys, kube, root)[0] == 0
    (root / "apps/config/app.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/web-config") == [], doc
    assert live(kube, "v1", "ConfigMap", ns, "web-config") is not None


def test_A3c_a_held_workloads_config_moved_to_another_open_bundle_is_deleted(
        web_and_config, kube, capsys):
    """web-config moves from apps/config to apps/other (both open). apps/other's copy is held
    with apps-web (correct), but apps/config's leftover is pruned: the live ConfigMap the held
    Deployment uses is deleted."""
    root, ns = web_and_config
    write_files(root, {**gate("web", "{bundles: [apps-web], reason: web freeze}")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/config/app.yaml": cm("other", ns, "v1"),
                       "apps/other/app.yaml": cm("web-config", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/web-config") == [], by_name(doc)
    assert live(kube, "v1", "ConfigMap", ns, "web-config") is not None


@pytest.mark.parametrize("how", ["bundle-leaves-git", "object-removed"])
def test_A4_the_namespace_a_held_bundle_lives_in_is_pruned(two, kube, capsys, how):
    """apps-h is held; the Namespace its objects live in belongs to bundle `ns`. The `ns`
    folder drops it: the Namespace is deleted, and with it (Kubernetes' namespace deletion,
    Karmada's on every member) every object of the held bundle."""
    root, ns = two
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    if how == "bundle-leaves-git":
        (root / "ns/ns.yaml").unlink()
    else:
        write_files(root, {"ns/ns.yaml": "apiVersion: v1\nkind: Namespace\n"
                                         f"metadata: {{name: {ns}-other}}\n"})
    code, doc = run_json(capsys, kube, root)
    deleted = [p for m, p in writes(kube, "/namespaces/") if m == "DELETE"
               and p.endswith(f"/namespaces/{ns}")]
    assert deleted == [], doc
    assert live(kube, "v1", "Namespace", "", ns) is not None


def test_A4b_the_crd_of_a_held_bundles_objects_is_pruned(tmp_path, kube, capsys):
    """The same with a CRD: platform/crds owns the CRD, held apps/h has a custom resource of
    it; platform/crds drops the CRD: it is deleted, and every custom resource with it."""
    from tests.support.manifests import crd_yaml

    ns = kube.ns("crd")
    group = f"{kube.run_id}.example.com"
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "platform/crds/crd.yaml": crd_yaml(group, "Widget"),
        "platform/crds/keep.yaml": cm("keep", ns, "v1"),
        "apps/h/w.yaml": f"apiVersion: {group}/v1\nkind: Widget\n"
                         f"metadata: {{name: w, namespace: {ns}}}\nspec: {{size: 1}}\n",
    })
    code, doc = run_json(capsys, kube, root)
    assert code == 0, doc
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    (root / "platform/crds/crd.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    deleted = [p for m, p in writes(kube, "customresourcedefinitions") if m == "DELETE"]
    assert deleted == [], by_name(doc)


# ------------------------------------------------------------------------------------------
# A pause label travels with its object; the rest of the bundle is held by its record.
# ------------------------------------------------------------------------------------------

def paused_cm(name: str, ns: str, data: str) -> str:
    return (f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, "
            f"labels: {{gitgate.io/paused: 'true'}}}}\ndata: {{value: '{data}'}}\n")


@pytest.mark.parametrize("where", ["new-bundle", "renamed-rest"])
def test_L1_moving_the_pause_labelled_object_out_releases_the_rest(two, kube, capsys, where):
    root, ns = two
    write_files(root, {"apps/a/app.yaml": paused_cm("a", ns, "v1") + cm("moving", ns, "v1")})
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "held", doc
    if where == "new-bundle":  # the labelled object, label and all, goes to apps/z
        write_files(root, {"apps/a/app.yaml": cm("moving", ns, "v2"),
                           "apps/z/app.yaml": paused_cm("a", ns, "v1")})
    else:  # the rest goes to a new folder; the labelled object stays in apps/a
        write_files(root, {"apps/a/app.yaml": paused_cm("a", ns, "v1"),
                           "apps/a2/app.yaml": cm("moving", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/moving") == [], by_name(doc)
    assert live(kube, "v1", "ConfigMap", ns, "moving")["data"]["value"] == "v1"


# ------------------------------------------------------------------------------------------
# Tenants: a tenant's folder cannot fail or unfreeze another tenant's bundle by its name.
# ------------------------------------------------------------------------------------------

@pytest.fixture
def tenants(tmp_path, kube, capsys):
    pay, shop = kube.ns("pay"), kube.ns("shop")
    root = write_files(tmp_path / "repo", {
        "gitgate.yaml": PLACEMENT + textwrap.dedent(f"""\
            tenants:
              - name: payments
                paths: ["apps/payments/**"]
                namespaces: ["{pay}"]
                clusters: [member1, member2]
              - name: shop
                paths: ["apps/shop/**"]
                namespaces: ["{shop}"]
                clusters: [member1, member2]
            """),
        "platform/ns/ns.yaml": "".join(
            f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n"
            for n in (pay, shop)),
        "apps/payments/web/bundle.yaml": "name: pay-web\n",
        "apps/payments/web/app.yaml": deployment("web", pay, "web:1"),
        "apps/payments/config/bundle.yaml": "name: pay-config\n",
        "apps/payments/config/app.yaml": cm("web-config", pay, "v1"),
        "apps/shop/cart/bundle.yaml": "name: shop-cart\n",
        "apps/shop/cart/app.yaml": cm("cart", shop, "v1"),
    })
    code, doc = run_json(capsys, kube, root)
    assert code == 0, doc
    return root, pay, shop


def test_T1_a_tenant_claims_another_tenants_bundle_name(tenants, kube, capsys):
    """shop's folder sets `name: pay-web`: payments' bundle fails (DuplicateBundle)."""
    root, pay, shop = tenants
    write_files(root, {"apps/shop/cart/bundle.yaml": "name: pay-web\n"})
    code, doc = run_json(capsys, kube, root)
    pay_web = [b for b in doc["bundles"] if b["name"] == "pay-web"]
    assert all(not b.get("failed") for b in pay_web), pay_web


def test_T2_a_tenant_name_claim_releases_another_tenants_freeze_on_what_it_uses(
        tenants, kube, capsys):
    """payments' pay-web is held; its Deployment uses web-config (pay-config), held with it.
    shop's folder claims the name pay-web: pay-web fails instead of being held, and
    web-config goes out."""
    root, pay, shop = tenants
    write_files(root, {**gate("pay", "{bundles: [pay-web], reason: payments freeze}"),
                       "apps/payments/config/app.yaml": cm("web-config", pay, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert live(kube, "v1", "ConfigMap", pay, "web-config")["data"]["value"] == "v1"
    write_files(root, {"apps/shop/cart/bundle.yaml": "name: pay-web\n"})
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/web-config") == [], doc
    assert live(kube, "v1", "ConfigMap", pay, "web-config")["data"]["value"] == "v1"


# ------------------------------------------------------------------------------------------
# A bundle suspended by the commit's own labels keeps its objects from other bundles.
# ------------------------------------------------------------------------------------------

def test_S1_objects_of_a_bundle_suspended_by_its_new_label_are_taken_unsuspended(
        two, kube, capsys):
    """A suspend gate by label tier=db exists. One commit labels apps/a tier=db (suspended
    from now on) and moves its ConfigMap `moving` to apps/h. No bundle is HELD, so
    with_live_freezes returns early and apps-h writes `moving` (unsuspended) at once."""
    root, ns = two
    write_files(root, gate("db", "{selector: {matchLabels: {tier: db}}, action: suspend, "
                                 "reason: db suspension}"))
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/a/bundle.yaml": "labels: {tier: db}\n",
                       "apps/a/app.yaml": cm("a", ns, "v1"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "suspended"
    assert writes(kube, "/configmaps/moving") == [], by_name(doc)["apps-h"]


def test_S1_control_with_an_unrelated_held_bundle_the_write_is_refused(two, kube, capsys):
    """The same commit when some unrelated bundle (apps-z) is held: apps-h is refused
    (Frozen), as the module's doc promises. The outcome of S1 depends on an unrelated PAUSE."""
    root, ns = two
    write_files(root, {**gate("db", "{selector: {matchLabels: {tier: db}}, action: suspend, "
                                    "reason: db suspension}"),
                       "apps/z/app.yaml": cm("z", ns, "v1"), "apps/z/PAUSE": "unrelated\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/a/bundle.yaml": "labels: {tier: db}\n",
                       "apps/a/app.yaml": cm("a", ns, "v1"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert [m for m, _ in writes(kube, "/configmaps/moving")] != ["PATCH"]
    assert by_name(doc)["apps-h"]["reason"] == "Frozen"


# ------------------------------------------------------------------------------------------
# A suspended bundle deletes none of its templates (a deleted template is deleted on every
# member, the suspended ones too); that happens once the suspension lifts.
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("clusters", ["", "member2"])
def test_S2_a_suspended_bundle_prunes_its_templates_off_the_suspended_clusters(
        two, kube, capsys, clusters):
    root, ns = two
    where = f", clusters: [{clusters}]" if clusters else ""
    write_files(root, gate("a", f"{{bundles: [apps-a], action: suspend, "
                                f"reason: blue/green move{where}}}"))
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "suspended", doc
    # a commit in apps/a alone: `moving` leaves Git
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1")})
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "suspended"
    assert writes(kube, "/configmaps/moving") == [], by_name(doc)["apps-a"]


def test_S2_control_a_suspended_bundle_that_left_git_is_kept(two, kube, capsys):
    root, ns = two
    write_files(root, gate("a", "{bundles: [apps-a], action: suspend, reason: move}"))
    assert run_json(capsys, kube, root)[0] == 0
    (root / "apps/a/app.yaml").unlink()
    code, doc = run_json(capsys, kube, root)
    assert writes(kube, "/configmaps/") == []


# ------------------------------------------------------------------------------------------
# A freeze pushed while a pass writes stops what it covers and what acts on it, whatever
# is pushed after it.
# ------------------------------------------------------------------------------------------

class PushOnFirstWrite:
    """The test cluster; before the first write of ConfigMap `trigger`, `hook` runs (a push
    the loop then peeks)."""

    def __init__(self, cluster, hook):
        self._cluster, self.hook, self.fired = cluster, hook, False
        self.written: list[str] = []

    def __getattr__(self, name):
        return getattr(self._cluster, name)

    def apply(self, obj, *args, **kwargs):
        meta = obj.get("metadata") or {}
        if not kwargs.get("dry_run") and obj.get("kind") != "Bundle":
            if meta.get("name") == "trigger" and not self.fired:
                self.fired = True
                self.hook()
            if self.fired:
                self.written.append(f"{obj.get('kind')}/{meta.get('name')}")
        return self._cluster.apply(obj, *args, **kwargs)


def test_C1_a_freeze_pushed_mid_pass_does_not_stop_what_acts_on_the_frozen_bundle(
        tmp_path, kube, tools):
    from dataclasses import replace as dc_replace

    from tests.support.looping import Upstream, reconciler

    up = Upstream(tmp_path, kube)
    ns = up.ns

    def files(version: str) -> dict[str, str]:
        return {
            "gitgate.yaml": PLACEMENT,
            "apps/aaa/app.yaml": cm("trigger", ns, version),
            "apps/db/bundle.yaml": "name: db\n",
            "apps/db/app.yaml": deployment("db", ns, f"db:{version}", config="db-config"),
            "apps/cfg/bundle.yaml": "name: cfg\n",
            "apps/cfg/app.yaml": cm("db-config", ns, version),
            "platform/bundle.yaml": "name: platform\n",
            "platform/override.yaml": override(ns, f"db:{version}-override"),
        }

    up.commit(files("1"), "v1")
    cluster = PushOnFirstWrite(kube.cluster, lambda: None)
    rec = reconciler(up, kube, tools, tmp_path, cluster=cluster)
    rec.settings = dc_replace(rec.settings, apply=dc_replace(rec.settings.apply, concurrency=1))
    assert rec.tick() is not None
    assert live_override_image(kube, ns) == "db:1-override"

    up.commit(files("2"), "v2")

    def push():
        up.commit(gate("db", "{bundles: [db], reason: on-call freeze of db}"), "freeze db")
        assert rec.freezes.peek_newer()

    cluster.hook, cluster.fired, cluster.written = push, False, []
    rec.state.requested = True
    assert rec.tick() is not None
    results = {b.bundle: b for b in rec.state.last_result.bundles}
    assert results["db"].reason == "Frozen"  # db itself stopped: correct
    assert live(kube, "apps/v1", "Deployment", ns, "db")["spec"]["template"]["spec"][
        "containers"][0]["image"] == "db:1"
    # what the next pass holds with db must not go out either
    leaked = [w for w in cluster.written if w in ("ConfigMap/db-config",
                                                   "OverridePolicy/db-image")]
    assert leaked == [], (leaked, cluster.written)


def test_C2_with_gate_signers_an_unsigned_weakening_pushed_mid_pass_releases_a_signed_freeze(
        tmp_path, kube, tools):
    """`--gate-signers` (alice): a gate carol weakens stays as alice left it (the guard puts
    it back at the next sync). But the mid-pass peek reads the remote's head raw, without the
    guard: alice's signed gate, then carol's unsigned weakening, pushed while a pass writes:
    the pass writes on what alice froze."""
    from dataclasses import replace as dc_replace

    from gitgate.source.gateguard import GateGuard
    from gitgate.source.signatures import Trust
    from tests.support.looping import T0, Clock, Upstream, reconciler
    from tests.support.signing import Keys, allowed_signers
    from tests.support.signing import push_signed as push

    keys = Keys(tmp_path, ("alice", "carol"))
    try:
        up = Upstream(tmp_path, kube)
        files = {"gitgate.yaml": PLACEMENT}
        for i in range(3):
            files[f"apps/b{i}/bundle.yaml"] = f"name: b{i}\n"
            files[f"apps/b{i}/cms.yaml"] = "".join(cm(f"b{i}-{k}", up.ns, "one")
                                                    for k in range(3))
        push(up, keys, "alice", files, "three bundles")
        written: list[str] = []
        hook = {"fn": None}

        class Cluster:
            def __getattr__(self, name):
                return getattr(kube.cluster, name)

            def apply(self, obj, *args, **kwargs):
                name = (obj.get("metadata") or {}).get("name", "")
                if obj.get("kind") == "ConfigMap" and name.startswith("b") and \
                        not kwargs.get("dry_run"):
                    if hook["fn"] is not None:
                        fn, hook["fn"] = hook["fn"], None
                        fn()
                    written.append(name)
                return kube.cluster.apply(obj, *args, **kwargs)

        rec = reconciler(up, kube, tools, tmp_path, Clock(T0), cluster=Cluster())
        rec.settings = dc_replace(rec.settings,
                                  apply=dc_replace(rec.settings.apply, concurrency=1))
        rec.source.guard = GateGuard(Trust(allowed_signers(tmp_path / "gate_signers",
                                                           keys.folder, "alice"),
                                           None, tmp_path / "g"))
        assert rec.tick() is not None
        push(up, keys, "carol", {f"apps/b{i}/cms.yaml": "".join(
            cm(f"b{i}-{k}", up.ns, "two") for k in range(3)) for i in range(3)}, "v2")

        def mid_pass():
            push(up, keys, "alice", up.gate("freeze", "{bundles: ['b[12]'], reason: INC}"),
                 "freeze b1, b2 (signed)")
            assert rec.freezes.peek_newer()  # the freeze is seen: b1, b2 stop
            push(up, keys, "carol", up.gate("freeze", "{bundles: ['nothing'], reason: INC}"),
                 "weaken it (unsigned)")
            rec.freezes.peek_newer()

        hook["fn"], written[:] = mid_pass, []
        rec.state.requested = True
        assert rec.tick() is not None
        after = written[1:]
        leaked = [n for n in after if n.startswith(("b1", "b2"))]
        # the next sync restores the gate (carol is no gate signer): b1, b2 are held
        rec.state.requested = True
        rec.tick()
        verdicts = {b.bundle: b.verdict for b in rec.state.last_result.bundles}
        assert verdicts["b1"] == "held", verdicts
        assert leaked == [], leaked
    finally:
        keys.close()


# ------------------------------------------------------------------------------------------
# A bundle suspended through the identity it is live under keeps that identity.
# ------------------------------------------------------------------------------------------

def _suspension(kube, ns: str, bundle: str):
    for kind, where in (("PropagationPolicy", ns), ("ClusterPropagationPolicy", "")):
        policy = live(kube, POLICY_API, kind, where, policy_name(bundle, kube.run_id))
        if policy is not None:
            return policy["spec"].get("suspension")
    return "no policy"


@pytest.mark.parametrize("clusters", ["", "member2"])
def test_E1_dropping_the_label_escapes_a_suspend_label_gate_one_pass_later(
        two, kube, capsys, clusters):
    root, ns = two
    where = f", clusters: [{clusters}]" if clusters else ""
    write_files(root, {"apps/a/bundle.yaml": "labels: {tier: db}\n",
                       **gate("db", "{selector: {matchLabels: {tier: db}}, action: suspend, "
                                    f"reason: db maintenance{where}}}")})
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "suspended", doc
    suspended = _suspension(kube, ns, "apps-a")
    assert suspended
    # apps/a's own folder drops the label and changes its content
    write_files(root, {"apps/a/bundle.yaml": "labels: {tier: none}\n",
                       "apps/a/app.yaml": cm("a", ns, "v2") + cm("moving", ns, "v2")})
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "suspended", doc  # the record holds it: ok
    # one more pass, nothing committed
    code, doc = run_json(capsys, kube, root)
    assert by_name(doc)["apps-a"]["verdict"] == "suspended", by_name(doc)["apps-a"]
    assert _suspension(kube, ns, "apps-a") == suspended


# ------------------------------------------------------------------------------------------
# Instances: `--instance` keeps several gitgates on one API server apart.
# ------------------------------------------------------------------------------------------

def test_I1_another_instance_overwrites_a_held_object(tmp_path, kube, capsys):
    """Instances share the field manager `gitgate`: another instance is refused by the
    object's `gitgate.io/instance` label instead (`OtherInstance`)."""
    ns = kube.ns("inst")
    one = write_files(tmp_path / "one", {
        "gitgate.yaml": PLACEMENT,
        "ns/ns.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n",
        "apps/web/app.yaml": cm("web", ns, "v1"),
    })
    assert run_json(capsys, kube, one)[0] == 0
    write_files(one, {"apps/web/PAUSE": "incident\n"})
    assert run_json(capsys, kube, one)[0] == 0
    two = write_files(tmp_path / "two", {
        "gitgate.yaml": PLACEMENT,
        "apps/web/app.yaml": cm("web", ns, "planted"),
    })
    capsys.readouterr()
    kube.emulator.state.requests.clear()
    main(["apply", str(two), "--kubeconfig", kube.kubeconfig, "--instance",
          kube.run_id + "x", "-o", "json"])
    out = capsys.readouterr().out
    assert writes(kube, f"/namespaces/{ns}/configmaps/web") == [], out
    assert live(kube, "v1", "ConfigMap", ns, "web")["data"]["value"] == "v1"


def test_B3_shard_prunes_what_a_held_bundle_of_another_shard_claims(two, kube, capsys, tools):
    """`run --shard`: the same commit as B0, reconciled by the replica whose share holds
    apps-a but not apps-h (reconcile's `shard`, as the loop passes it)."""
    from datetime import UTC, datetime

    from gitgate.apply.work import ApplyOptions
    from gitgate.passes.onepass import reconcile

    root, ns = two
    write_files(root, {"apps/h/PAUSE": "incident\n"})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1")})
    kube.emulator.state.requests.clear()
    done = reconcile(root, tools, kube.cluster,
                     ApplyOptions(now=datetime.now(UTC), instance=kube.run_id),
                     shard=lambda name: name != "apps-h")
    assert writes(kube, "/configmaps/moving") == [], [
        (b.bundle, b.verdict, b.reason) for b in done.result.bundles]
    assert live(kube, "v1", "ConfigMap", ns, "moving") is not None


def test_C3_with_gate_signers_a_signed_gate_removed_unsigned_before_the_next_fetch_never_holds(
        tmp_path, kube, tools):
    """`--gate-signers` (alice). alice pushes a gate; carol (no gate signer) deletes it before
    the loop fetches. The guard reviews `git diff base..head`, where the file is absent at
    both ends: nothing to put back, and the freeze alice signed never holds."""
    from gitgate.source.gateguard import GateGuard
    from gitgate.source.signatures import Trust
    from tests.support.looping import T0, Clock, Upstream, reconciler
    from tests.support.signing import Keys, allowed_signers
    from tests.support.signing import push_signed as push

    keys = Keys(tmp_path, ("alice", "carol"))
    try:
        up = Upstream(tmp_path, kube)
        rec = reconciler(up, kube, tools, tmp_path, Clock(T0))
        rec.source.guard = GateGuard(Trust(allowed_signers(tmp_path / "gate_signers",
                                                           keys.folder, "alice"),
                                           None, tmp_path / "g"))
        assert rec.tick() is not None
        push(up, keys, "alice", up.gate("incident", f"{{bundles: ['{up.run}-app'], "
                                                    "reason: INC-1}"), "freeze (signed)")
        push(up, keys, "carol", {"gates/incident.yaml": None,
                                 "app/cm.yaml": up.configmap("two")}, "lift + change")
        rec.state.requested = True
        rec.tick()
        verdicts = {b.bundle: b.verdict for b in rec.state.last_result.bundles}
        assert verdicts[f"{up.run}-app"] == "held", verdicts
    finally:
        keys.close()


# ------------------------------------------------------------------------------------------
# The look at a newer head while a pass writes survives whatever a folder commits, and
# whatever spelling `--path` has.
# ------------------------------------------------------------------------------------------

def test_P1_a_gitlink_named_PAUSE_in_a_tenants_folder_kills_the_peek(tmp_path, kube, tools):
    """A submodule entry (mode 160000) named PAUSE in any folder: `_tree_at` lists it as a
    file, `git show` of it fails with a GitCommandError, which `pause_files` (catching
    GitgateError) and `peek_newer` (catching GitgateError around `peek` only) let through.
    In `run`, `watch_newer`'s thread has no handler: it ends, and no freeze pushed while a
    pass writes is seen again until a restart."""
    import threading
    from dataclasses import replace as dc_replace

    from tests.support.looping import Upstream, reconciler

    up = Upstream(tmp_path, kube)
    rec = reconciler(up, kube, tools, tmp_path)
    assert rec.tick() is not None
    before = up.work.head.commit.hexsha
    # the tenant's commit: a gitlink at apps/payments/PAUSE
    (up.root / "apps/payments").mkdir(parents=True)
    (up.root / "apps/payments/cm.yaml").write_text(up.configmap("x").replace("settings", "p"))
    up.work.git.add("-A")
    missing = "1234567890" * 4  # a submodule commit the repo does not have
    up.work.git.update_index("--add", "--cacheinfo", f"160000,{missing},apps/payments/PAUSE")
    up.work.git.commit("-m", "tenant commit")
    up.work.git.push("origin", "main", "--force")

    rec.settings = dc_replace(rec.settings, freeze_check=rec.settings.freeze_check * 0)
    rec.freezes.begin(before)  # as while a pass at `before` writes
    watcher = rec.watch_newer()
    rec.freezes.peek_wake.set()
    watcher.join(timeout=20)
    alive = watcher.is_alive()
    rec.stop.set()
    rec.freezes.peek_wake.set()
    watcher.join(timeout=10)
    assert alive, "the watcher thread died: no mid-pass freeze is seen until a restart"
    assert threading.active_count() >= 1


def test_T3_a_tenant_keeps_another_tenants_removed_bundle_alive(tenants, kube, capsys):
    """payments removes apps/payments/config from Git. shop's folder renders a ConfigMap of
    the same name in payments' namespace: shop's bundle fails (OutsideTenant), and
    `_claimed_elsewhere` then keeps payments' removed bundle ("still in Git, in bundle ...,
    which failed"): shop's folder freezes payments' prune."""
    root, pay, shop = tenants
    (root / "apps/payments/config/app.yaml").unlink()
    (root / "apps/payments/config/bundle.yaml").unlink()
    write_files(root, {"apps/shop/cart/app.yaml": cm("cart", shop, "v1")
                       + cm("web-config", pay, "squat")})
    code, doc = run_json(capsys, kube, root)
    bundles = by_name(doc)
    assert bundles["shop-cart"]["reason"] == "OutsideTenant"
    assert live(kube, "v1", "ConfigMap", pay, "web-config") is None, bundles["pay-config"]


# ------------------------------------------------------------------------------------------
# An object two records list is frozen for each bundle but its holder.
# ------------------------------------------------------------------------------------------

def _two_records_claim_moving(root, ns, kube, capsys):
    # `moving` goes to apps/h (taken over), then back to apps/a while apps/h fails to render
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1"),
                       "apps/h/app.yaml": cm("h", ns, "v1") + cm("moving", ns, "v1")})
    assert run_json(capsys, kube, root)[0] == 0
    write_files(root, {"apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v2"),
                       "apps/h/broken.yaml": "kind: [unclosed\n"})
    run_json(capsys, kube, root)
    (root / "apps/h/broken.yaml").unlink()
    write_files(root, {"apps/h/app.yaml": cm("h", ns, "v1")})


@pytest.mark.parametrize("a_suspended", [False, True], ids=["a-open", "a-suspended"])
def test_U1_suspending_the_other_claimant_lets_it_write_a_held_bundles_object(
        two, kube, capsys, a_suspended):
    root, ns = two
    _two_records_claim_moving(root, ns, kube, capsys)
    gates = gate("h", "{bundles: [apps-h], reason: h freeze}")
    if a_suspended:
        gates.update(gate("a", "{bundles: [apps-a], action: suspend, clusters: [member2], "
                               "reason: a on member2}"))
    write_files(root, {**gates, "apps/a/app.yaml": cm("a", ns, "v1") + cm("moving", ns, "v3")})
    code, doc = run_json(capsys, kube, root)
    bundles = by_name(doc)
    assert bundles["apps-h"]["verdict"] == "held"
    assert writes(kube, "/configmaps/moving") == [], bundles["apps-a"]


@pytest.mark.parametrize("path", ["sub", "./sub"])
def test_P2_run_path_with_a_leading_dot_slash_blinds_the_peek(tmp_path, kube, tools, path):
    """`gitgate run --path ./sub` (a careless but working spelling: the checkout is read at
    cache/./sub): `_tree_at` takes "./sub/" as the prefix of `git ls-tree` names, which never
    start with "./": the newer commit has no gitgate.yaml, no gates, no PAUSE files, and a
    freeze pushed mid-pass is never seen."""

    from tests.support.looping import Upstream, reconciler

    up = Upstream(tmp_path, kube)
    first = up.commit({"sub/gitgate.yaml": PLACEMENT,
                       "sub/apps/a/app.yaml": cm("a", up.ns, "v1")}, "sub repo")
    rec = reconciler(up, kube, tools, tmp_path, path=path)
    up.commit({"sub/gates/all.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\n"
                                     "metadata: {name: all}\nspec: {bundles: ['*'], "
                                     "reason: stop}\n",
               "sub/apps/a/PAUSE": "incident\n"}, "freeze")
    rec.freezes.begin(first)  # as while a pass at `first` writes
    assert rec.freezes.peek_newer()
    assert rec.freezes.newer is not None
    assert [g.name for g in rec.freezes.newer.gates] == ["all"], rec.freezes.newer
    assert "apps/a" in rec.freezes.newer.pauses


@pytest.mark.parametrize("path", ["sub", "./sub"])
def test_P3_gate_signers_with_run_path_dot_slash_accept_an_unsigned_lift(tmp_path, kube, tools,
                                                                        path):
    """`gitgate run --path ./sub --gate-signers F` (run.py: GateGuard(trust, args.path)): the
    guard's gates folder is "./sub/gates", `git diff --name-only` says "sub/gates/...": no
    gate file is ever a freeze file, and carol's unsigned removal lifts alice's freeze."""

    from gitgate.source.gateguard import GateGuard
    from gitgate.source.signatures import Trust
    from tests.support.looping import T0, Clock, Upstream, reconciler
    from tests.support.signing import Keys, allowed_signers
    from tests.support.signing import push_signed as push

    keys = Keys(tmp_path, ("alice", "carol"))
    try:
        up = Upstream(tmp_path, kube)
        push(up, keys, "alice", {
            "sub/gitgate.yaml": PLACEMENT,
            "sub/apps/a/bundle.yaml": "name: a\n",
            "sub/apps/a/app.yaml": cm("a", up.ns, "v1"),
            "sub/gates/inc.yaml": "apiVersion: gitgate.io/v1alpha1\nkind: Gate\nmetadata: "
                                  "{name: inc}\nspec: {bundles: [a], reason: INC-1}\n"},
             "sub repo, frozen (signed)")
        rec = reconciler(up, kube, tools, tmp_path, Clock(T0), path=path)
        rec.source.guard = GateGuard(Trust(allowed_signers(tmp_path / "gate_signers",
                                                           keys.folder, "alice"),
                                           None, tmp_path / "g"), path)
        rec.tick()
        verdicts = {b.bundle: b.verdict for b in rec.state.last_result.bundles}
        assert verdicts["a"] == "held", verdicts
        push(up, keys, "carol", {"sub/gates/inc.yaml": None,
                                 "sub/apps/a/app.yaml": cm("a", up.ns, "v2")}, "lift (unsigned)")
        rec.state.requested = True
        rec.tick()
        verdicts = {b.bundle: b.verdict for b in rec.state.last_result.bundles}
        assert verdicts["a"] == "held", verdicts
    finally:
        keys.close()
