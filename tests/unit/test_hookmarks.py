"""Hooks as objects: which phase, wave and delete policies an object's annotations give it,
which hooks never run, and the names of objects that only have `generateName`."""

from pathlib import Path

import pytest

from gitgate.bundle.group import group_all
from gitgate.model.hookmarks import DeletePolicy, Hook, HookError, Phase, Skipped, hook_of
from gitgate.render.pipeline import render_repo

EXAMPLES = Path(__file__).parents[1] / "data" / "argocd-example-apps"
B = DeletePolicy.BEFORE_HOOK_CREATION


def job(**annotations):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "annotations": annotations}}


@pytest.mark.parametrize(("annotations", "expected"), [
    ({}, None),
    ({"argocd.argoproj.io/sync-wave": "3"}, None),  # a plain object with a wave
    ({"argocd.argoproj.io/hook": "PreSync"}, Hook(Phase.PRE_SYNC)),
    ({"argocd.argoproj.io/hook": "PostSync", "argocd.argoproj.io/sync-wave": "-2",
      "argocd.argoproj.io/hook-delete-policy": "HookSucceeded,HookFailed"},
     Hook(Phase.POST_SYNC, -2, frozenset({DeletePolicy.HOOK_SUCCEEDED,
                                           DeletePolicy.HOOK_FAILED}))),
    ({"argocd.argoproj.io/hook": "Sync,PreSync"}, Hook(Phase.PRE_SYNC)),
    ({"argocd.argoproj.io/hook": "SyncFail"}, Hook(Phase.SYNC_FAIL)),
    ({"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "5"},
     Hook(Phase.PRE_SYNC, 5, frozenset({B}), "helm.sh/hook")),
    ({"helm.sh/hook": "post-upgrade", "helm.sh/hook-delete-policy": "hook-succeeded"},
     Hook(Phase.POST_SYNC, 0, frozenset({DeletePolicy.HOOK_SUCCEEDED}), "helm.sh/hook")),
    # Argo CD's annotation wins over Helm's, as in Argo CD
    ({"helm.sh/hook": "post-install", "argocd.argoproj.io/hook": "PreSync",
      "helm.sh/hook-weight": "9"}, Hook(Phase.PRE_SYNC)),
])
def test_phase_wave_and_delete_policy(annotations, expected):
    assert hook_of(job(**annotations)) == expected


@pytest.mark.parametrize("annotations", [
    {"helm.sh/hook": "test"}, {"helm.sh/hook": "test-success"},
    {"helm.sh/hook": "pre-delete,post-rollback"}, {"argocd.argoproj.io/hook": "Skip"}])
def test_hooks_that_never_run_are_skipped(annotations):
    assert isinstance(hook_of(job(**annotations)), Skipped)


@pytest.mark.parametrize(("annotations", "words"), [
    ({"argocd.argoproj.io/hook": "PreSynk"}, "'PreSynk'"),
    ({"helm.sh/hook": "pre-instal"}, "'pre-instal'"),
    ({"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "first"}, "helm.sh/hook-weight"),
    ({"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/sync-wave": "1.5"},
     "sync-wave"),
    ({"helm.sh/hook": "pre-install", "helm.sh/hook-delete-policy": "after"}, "'after'"),
])
def test_unreadable_annotations_name_themselves(annotations, words):
    with pytest.raises(HookError, match=words):
        hook_of(job(**annotations))


def rendered(folder, root=EXAMPLES):
    result = render_repo(root, None, only=lambda s: s.path == folder)
    assert result.problems == ()
    (bundle,) = group_all(result.rendered)
    return bundle


def generated(bundle):
    return sorted(r.name for r in bundle.refs if r.name.startswith("migrate-schema-"))


@pytest.mark.parametrize("folder", ["sync-waves", "helm-hooks"])
def test_argo_examples_render_with_deterministic_names(folder):
    first, second = rendered(folder), rendered(folder)
    (name,) = generated(first)
    assert len(name) == len("migrate-schema-") + 8
    assert generated(second) == [name]
    job_ = next(o for o in first.objects if o["metadata"]["name"] == name)
    assert job_["metadata"]["generateName"] == "migrate-schema-"
    assert not first.problems


def test_helm_test_hook_is_left_out_and_listed():
    bundle = rendered("helm-hooks")
    assert all(r.name != "web-test" for r in bundle.refs)
    assert [(str(r), why.split(":")[0]) for r, why in bundle.skipped] == [
        ("Pod default/web-test", "helm.sh/hook")]


def test_a_changed_bundle_gives_new_generated_names(tmp_path):
    folder = tmp_path / "sync-waves"
    folder.mkdir()
    text = (EXAMPLES / "sync-waves" / "manifests.yaml").read_text()
    (folder / "manifests.yaml").write_text(text)
    before = generated(rendered("sync-waves", tmp_path))
    (folder / "manifests.yaml").write_text(text.replace("nginx:1.27", "nginx:1.28", 1))
    after = generated(rendered("sync-waves", tmp_path))
    assert before != after and len(after) == 1


def test_a_bad_hook_annotation_fails_its_bundle_naming_the_object(tmp_path):
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: x-\n  annotations:\n"
        "    helm.sh/hook: pre-instal\n")
    result = render_repo(tmp_path, None)
    (bundle,) = group_all(result.rendered)
    assert bundle.failed and "Job.batch default/x-" in bundle.problems[0].message
    assert "pre-instal" in bundle.problems[0].message
