import pytest

from gitgate.model import SourceKind
from gitgate.source.discover import discover, pause_covering
from tests.conftest import memory_tree


def kinds(discovery):
    return {s.path: s.kind for s in discovery.sources}


def test_each_kind_of_source_is_found_and_leaves_are_not_descended():
    tree = memory_tree({
        "apps/web/Chart.yaml": "name: web\nversion: 1.0.0\n",
        "apps/web/templates/deploy.yaml": "kind: Deployment\n",
        "apps/web/charts/sub/Chart.yaml": "name: sub\nversion: 1.0.0\n",
        "apps/api/kustomization.yaml": "resources: [a.yaml]\n",
        "apps/api/a.yaml": "kind: ConfigMap\n",
        "apps/raw/one.yaml": "kind: ConfigMap\n",
        "apps/raw/two.yml": "kind: Secret\n",
        "apps/raw/notes.txt": "hello",
        "gates/freeze.yaml": "kind: Gate\n",
        ".github/workflows/ci.yaml": "on: push\n",
        "README.md": "# repo",
    })
    found = discover(tree)
    assert kinds(found) == {"apps/web": SourceKind.HELM, "apps/api": SourceKind.KUSTOMIZE,
                            "apps/raw": SourceKind.RAW}
    raw = next(s for s in found.sources if s.path == "apps/raw")
    assert raw.files == ("apps/raw/one.yaml", "apps/raw/two.yml")
    assert raw.bundle_name == "apps-raw"
    assert found.problems == ()


def test_bundle_yaml_dir_makes_a_kustomize_source_and_hides_the_overlays():
    tree = memory_tree({
        "shop/bundle.yaml": "name: shop\ndir: overlays/prod\nnamespace: shop\n",
        "shop/base/kustomization.yaml": "resources: [d.yaml]\n",
        "shop/base/d.yaml": "kind: Deployment\n",
        "shop/overlays/prod/kustomization.yaml": "resources: [../../base]\n",
        "shop/overlays/dev/kustomization.yaml": "resources: [../../base]\n",
    })
    found = discover(tree)
    assert kinds(found) == {"shop": SourceKind.KUSTOMIZE}
    source = found.sources[0]
    assert (source.bundle_name, source.options.kustomize_dir, source.options.namespace) == (
        "shop", "overlays/prod", "shop")


def test_repo_config_sets_paths_gates_and_defaults():
    tree = memory_tree({
        "gitgate.yaml": """
            paths: [apps]
            gatesPath: freeze
            defaults:
              namespace: team-a
              labels: {team: a}
              placement: {clusterAffinity: {clusterNames: [m1]}}
        """,
        "apps/x/cm.yaml": "kind: ConfigMap\n",
        "apps/y/bundle.yaml": "labels: {tier: db}\nnamespace: db\n",
        "apps/y/cm.yaml": "kind: ConfigMap\n",
        "freeze/gate.yaml": "kind: Gate\n",
        "other/cm.yaml": "kind: ConfigMap\n",
    })
    found = discover(tree)
    assert set(kinds(found)) == {"apps/x", "apps/y"}
    x, y = found.sources
    assert x.options.namespace == "team-a" and x.options.labels == {"team": "a"}
    assert x.options.placement == {"clusterAffinity": {"clusterNames": ["m1"]}}
    assert y.options.namespace == "db" and y.options.labels == {"team": "a", "tier": "db"}
    assert found.config.gates_path == "freeze"


def test_a_bad_bundle_yaml_is_a_problem_for_its_folder_only():
    tree = memory_tree({
        "a/bundle.yaml": "nmae: typo\n",
        "a/cm.yaml": "kind: ConfigMap\n",
        "b/cm.yaml": "kind: ConfigMap\n",
    })
    found = discover(tree)
    assert kinds(found) == {"a": SourceKind.RAW, "b": SourceKind.RAW}
    (problem,) = found.problems
    assert problem.source == "a"
    assert problem.file == "a/bundle.yaml" and "nmae" in problem.message


def test_pause_file_text_is_the_reason():
    tree = memory_tree({"a/cm.yaml": "kind: ConfigMap\n", "a/PAUSE": "INC-42 debugging\n",
                        "b/cm.yaml": "kind: ConfigMap\n", "b/PAUSE": ""})
    reasons = {s.path: s.pause_reason for s in discover(tree).sources}
    assert reasons == {"a": "INC-42 debugging", "b": "paused by a PAUSE file"}


def grouped_failures(files: dict[str, str]) -> dict[str, list[str]]:
    from gitgate.bundle.group import grouped
    from gitgate.model import RenderedSource

    found = discover(memory_tree(files))
    rendered = [RenderedSource(s, ({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": s.path.replace(".", "-"),
                                                 "namespace": "default"}},))
                for s in found.sources]
    bundles, lost = grouped(rendered, tenancy=found.config.tenancy)
    out: dict[str, list[str]] = {}
    for problem in (*lost, *(p for b in bundles for p in b.problems)):
        out.setdefault(problem.source, []).append(problem.message)
    return out


def test_two_sources_with_one_bundle_name_both_fail_naming_each_other():
    """Nothing tells which folder the name is meant for (no tenant rule, no live record):
    both fail, each naming the other (`model.claims`)."""
    failed = grouped_failures({"a/bundle.yaml": "name: same\n", "a/cm.yaml": "kind: x\n",
                               "b/bundle.yaml": "name: same\n", "b/cm.yaml": "kind: x\n"})
    assert sorted(failed) == ["a", "b"]
    assert any("also claimed by b" in m for m in failed["a"])
    assert any("also claimed by a" in m for m in failed["b"])


def test_a_dotted_name_and_a_derived_one_that_store_alike_are_one_name():
    failed = grouped_failures({"a/bundle.yaml": "name: x.y\n", "a/cm.yaml": "kind: x\n",
                               "x.y/cm.yaml": "kind: x\n"})
    assert sorted(failed) == ["a", "x.y"]


def test_bad_gitgate_yaml_names_the_file_and_line():
    found = discover(memory_tree({"gitgate.yaml": "paths: [a\n", "a/x.yaml": "k: v\n"}))
    (problem,) = found.problems
    assert problem.file == "gitgate.yaml" and problem.line is not None


def test_a_folder_whose_bundle_yaml_breaks_keeps_the_folders_below():
    """Issue 28, item 10: a `dir:` overlay's base and overlays became sources of their own
    when its bundle.yaml had a typo, and clashed; the typo is the one problem."""
    found = discover(memory_tree({
        "app/bundle.yaml": "dir: overlays/prod\nlabels: a: b\n",
        "app/base/kustomization.yaml": "resources: [cm.yaml]\n",
        "app/base/cm.yaml": "kind: ConfigMap\n",
        "app/overlays/prod/kustomization.yaml": "resources: [../../base]\n",
        "web/cm.yaml": "kind: ConfigMap\n"}))
    assert [s.path for s in found.sources] == ["app", "web"]
    [problem] = found.problems
    assert (problem.file, problem.line, problem.source) == ("app/bundle.yaml", 2, "app")


@pytest.mark.parametrize(("file", "text", "line", "words"), [
    ("app/bundle.yaml", "name: a\n\ndri: x\n", 3, "unknown field(s) dri"),
    ("app/bundle.yaml", "rollout:\n  waves:\n  - clusters: [a]\n  - clusters: [a]\n", 4,
     "rollout.waves[1]"),
    ("app/bundle.yaml", "clusters:\n- clusters: [a]\n  values: {x: 1}\n- clusters: [b]\n", 4,
     "clusters[1] changes nothing"),
    ("app/bundle.yaml", "name: a\nsplit: apps\n", 2, "split must be"),
    ("gitgate.yaml", "paths: [app]\ndefaults:\n  nmespace: x\n", 3, "defaults.nmespace"),
    ("gitgate.yaml", "paths: [app]\ngatesPath: /abs\n", 2, "gatesPath"),
    ("gitgate.yaml", "paths: [app]\ntenants:\n- name: a\n  paths: [a]\n- name: a\n  paths: [b]\n",
     5, "tenants[1].name 'a' is used twice"),
    ("gitgate.yaml", "paths: [app]\ntenants:\n- name: a\n  paths: [a]\n  serviceAccount: "
     "{namespace: t}\n", 5, "serviceAccount needs a namespace and a name"),
    ("gitgate.yaml", "paths: [app]\ntenants:\n- {name: a, paths: ['../x']}\n", 3,
     "must stay inside the repo"),
    ("gitgate.yaml", "paths: [app]\nuntenanted: deny\n", 2, "untenanted must be platform"),
])
def test_a_config_complaint_names_the_line_of_its_key(file, text, line, words):
    files = {"gitgate.yaml": "paths: [app]\n", "app/cm.yaml": "kind: ConfigMap\n", file: text}
    [problem] = discover(memory_tree(files)).problems
    assert (problem.file, problem.line) == (file, line) and words in problem.message


def test_a_pause_holds_every_source_at_or_below_its_folder():
    d = discover(memory_tree({
        "apps/PAUSE": "incident 42\n",
        "apps/a/app.yaml": "kind: ConfigMap\n",
        "apps/b/c/app.yaml": "kind: ConfigMap\n",
        "apps/d/PAUSE": "their own\n",
        "apps/d/app.yaml": "kind: ConfigMap\n",
        "other/app.yaml": "kind: ConfigMap\n",
    }))
    held = {s.path: (s.pause_reason, s.pause_folder) for s in d.sources}
    assert held == {"apps/a": ("incident 42", "apps"), "apps/b/c": ("incident 42", "apps"),
                    "apps/d": ("their own", None), "other": (None, None)}


def test_a_pause_at_the_root_holds_every_source():
    d = discover(memory_tree({"pause.txt": "", "apps/a/app.yaml": "kind: ConfigMap\n",
                              "ns/ns.yaml": "kind: Namespace\n"}))
    assert {s.path: s.pause_folder for s in d.sources} == {"apps/a": ".", "ns": "."}
    assert all(s.pause_reason for s in d.sources)


@pytest.mark.parametrize(("folder", "pauses", "covering"), [
    ("apps/a", {"apps/a": "x", "apps": "y"}, "apps/a"),
    ("apps/a/b", {"apps": "y", ".": "z"}, "apps"),
    ("apps/a", {".": "z"}, "."),
    ("apps/a", {"apps/b": "x", "app": "y"}, None),
    (".", {}, None),
])
def test_the_nearest_pause_at_or_above_a_folder_covers_it(folder, pauses, covering):
    assert pause_covering(folder, pauses) == covering
