"""A corpus of hostile and broken repos (issue: a repo can't read, write, crash, stall or leak
through gitgate). Each case runs the real CLI in a subprocess (a segfault would show) with
small limits, and asserts: it ends by gitgate's own limits, the error names the file, the good
source beside it still renders, and no outside content or Secret value appears anywhere."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.conftest import write_files
from tests.support.hostile import (
    CHART,
    OUTSIDE,
    SECRET,
    assert_clean,
    assert_one_broken,
    chart,
    gitgate,
    growing_template,
    render,
    rendered_names,
    repo,
)

pytestmark = pytest.mark.integration


# ---------------------------------------------------------------- outside files read or written
@pytest.mark.parametrize("release", [
    "--set-file=leak={outside}/secret.txt", "--values={outside}/values.yaml",
    "--output-dir={outside}/written", "x --post-renderer=/bin/sh"])
def test_a_release_name_is_never_a_helm_flag(tmp_path, outside, tools, release):
    root = repo(tmp_path, {**chart("app"), "app/bundle.yaml":
                           f"releaseName: {json.dumps(release.format(outside=outside))}\n"})
    assert_one_broken(root, "app/bundle.yaml", "releaseName")
    assert not (outside / "written").exists()


def test_a_namespace_is_never_a_helm_flag(tmp_path, outside, tools):
    root = repo(tmp_path, {**chart("app"), "app/bundle.yaml":
                           f"namespace: '--values={outside}/values.yaml'\n"})
    assert_one_broken(root, "app/bundle.yaml", "namespace")


def test_a_chart_cannot_reach_out_through_a_chain_of_links(tmp_path, outside, tools):
    root = repo(tmp_path, {**chart("app", **{"templates/cm.yaml":
               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
               "data: {leak: {{ .Files.Get \"files/inner/secret.txt\" | quote }}}\n"}),
               "shared/keep.txt": "x\n"})
    os.symlink(outside / "secret.txt", root / "shared" / "secret.txt")  # escapes
    os.symlink(root / "shared", root / "app" / "files")  # in-repo folder link ...
    (root / "shared" / "inner").mkdir()
    os.symlink(outside / "secret.txt", root / "shared" / "inner" / "secret.txt")
    assert_one_broken(root, "shared/", "points outside the repo")


def test_a_kustomization_cannot_reach_out_through_a_chain_of_links(tmp_path, outside, tools):
    root = repo(tmp_path, {
        "app/kustomization.yaml": "resources: [linked/cm.yaml]\n",
        "shared/keep.txt": "x\n"})
    (outside / "cm.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: "
                                     f"leak}}\ndata: {{v: {OUTSIDE}}}\n")
    os.symlink(outside / "cm.yaml", root / "shared" / "cm.yaml")
    os.symlink(root / "shared", root / "app" / "linked")
    assert_one_broken(root, "shared/cm.yaml", "points outside the repo")


# ---------------------------------------------------------------- one file stalls or crashes
def bomb() -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    return text


@pytest.mark.parametrize("file", ["bomb/cm.yaml", "app/values.yaml", "app/Chart.yaml",
                                  "kust/kustomization.yaml", "app/bundle.yaml"])
def test_an_alias_bomb_in_any_file_is_refused_by_a_limit(tmp_path, tools, file):
    files = {**chart("app"), "kust/kustomization.yaml": "resources: [cm.yaml]\n",
             "kust/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n"}
    if file == "app/values.yaml":
        files["app/bundle.yaml"] = "valuesFiles: [values.yaml]\n"
    files[file] = bomb() if file != "app/Chart.yaml" else (
        "apiVersion: v2\nname: c\nversion: 0.1.0\n" + bomb())
    root = repo(tmp_path, files)
    assert_one_broken(root, file, "GITGATE_YAML_MAX_NODES")


def test_an_alias_bomb_in_a_gate_holds_everything_and_ends(tmp_path, tools):
    root = repo(tmp_path, {"gates/bomb.yaml": bomb()})
    plan = gitgate("plan", str(root), "-o", "json")
    document = json.loads(plan.stdout)
    assert {b["verdict"] for b in document["bundles"]} == {"held"}
    assert any("GITGATE_YAML_MAX_NODES" in e["message"] for e in document["errors"])


@pytest.mark.parametrize("text", ["a: " + "[" * 50000 + "]" * 50000 + "\n",
                                  "a: " + "{b: " * 20000 + "1" + "}" * 20000 + "\n"])
def test_deep_nesting_is_an_error_not_a_segfault(tmp_path, tools, text):
    root = repo(tmp_path, {"deep/cm.yaml": text})
    assert_one_broken(root, "deep/cm.yaml", "GITGATE_YAML_MAX_DEPTH")


def test_an_anchor_defined_again_is_yaml_and_prints_nothing(tmp_path, tools):
    """YAML lets an anchor be defined again (an alias names the latest, as go-yaml reads it);
    ruamel's warning of it once went to stderr naming "<file>" instead of the file."""
    root = repo(tmp_path, {"again/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: "
                           "{name: again}\ndata:\n  a: &v one\n  b: *v\n  c: &v two\n"
                           "  d: *v\n"})
    result, document = render(root)
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr
    [again] = [o for b in document["bundles"] for o in b["objects"]
               if o["metadata"]["name"] == "again"]
    assert again["data"] == {"a": "one", "b": "one", "c": "two", "d": "two"}


def test_a_file_that_is_not_utf8_is_named(tmp_path, tools):
    root = repo(tmp_path, {})
    (root / "bin").mkdir()
    (root / "bin" / "cm.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata: "
                                           b"{name: b}\ndata: {v: \"\xff\xfe\"}\n")
    assert_one_broken(root, "bin/cm.yaml", "UTF-8")


def test_a_chart_without_a_version_fails_alone(tmp_path, tools):
    root = repo(tmp_path, {**chart("app"), "app/Chart.yaml": "apiVersion: v2\nname: c\n"})
    assert_one_broken(root, "app/", "version")


@pytest.mark.parametrize("template", [
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {when: 2026-02-31}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {x: !!python/name:os.system ''}\n",
])
def test_odd_helm_output_fails_only_that_chart(tmp_path, tools, template):
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": template}))
    result, document = render(root)
    assert "good" in rendered_names(document)
    assert_clean(result.stdout, result.stderr)


def test_helm_output_has_a_cap(tmp_path, tools):
    big = "{{ range until 40000 }}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: " \
          "c{{ . }}}\ndata: {v: \"{{ repeat 100 \"x\" }}\"}\n{{ end }}"
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": big}))
    assert_one_broken(root, "app/", "GITGATE_RENDER_MAX_OUTPUT")


def test_a_template_loop_is_stopped_by_the_render_timeout(tmp_path, tools):
    # time, not memory (a growing list now meets the memory limit first: see below)
    spin = ("{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    root = repo(tmp_path, chart("app", **{"templates/cm.yaml": spin}))
    assert_one_broken(root, "app/", "GITGATE_RENDER_TIMEOUT")


# ---------------------------------------------------------------- Secret values in error text
def test_a_duplicated_secret_key_never_prints_the_values(tmp_path, tools):
    root = repo(tmp_path, {"app/secret.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\n"
        f"stringData:\n  password: {SECRET}\n  password: {SECRET}-2\n")})
    document = assert_one_broken(root, "app/secret.yaml", 'duplicate key "password"')
    assert SECRET not in json.dumps(document)


def test_a_source_whose_only_file_leaves_the_repo_fails_instead_of_vanishing(tmp_path,
                                                                            outside, tools):
    root = repo(tmp_path, {})
    (root / "app").mkdir()
    (outside / "cm.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}"
                                     f"\ndata: {{v: {OUTSIDE}}}\n")
    os.symlink(outside / "cm.yaml", root / "app" / "cm.yaml")
    document = assert_one_broken(root, "app/cm.yaml", "points outside the repo")
    assert {b["name"] for b in document["bundles"]} >= {"good"}
    plan = json.loads(gitgate("plan", str(root), "-o", "json").stdout)
    assert {b["name"]: b["verdict"] for b in plan["bundles"]}["app"] == "failed"


def test_stopping_kills_a_hung_render(tmp_path):
    """SIGTERM of `gitgate run` calls stop_all: a tool that hangs is killed at once (not at
    its 60 s time limit, which would say so instead)."""
    import threading

    from gitgate.errors import RenderError
    from gitgate.render.sandbox import Limits, run_tool, stop_all

    started = tmp_path / "started"

    def stop_once_started() -> None:
        while not started.exists():
            threading.Event().wait(0.05)
        stop_all()

    threading.Thread(target=stop_once_started, daemon=True).start()
    hang = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    with pytest.raises(RenderError, match="was stopped"):
        run_tool([sys.executable, "-c", hang], cwd=tmp_path, display="app", tool="helm",
                 limits=Limits(timeout=60))


def test_a_tool_killed_from_outside_is_told_apart_from_one_gitgate_stopped(tmp_path):
    """A kill gitgate did not send (the kernel's out-of-memory killer sends SIGKILL) names the
    signal and says it was not gitgate, even when the tool had written part of its output."""
    from gitgate.errors import RenderError
    from gitgate.render.sandbox import run_tool

    suicide = "import os, signal; print('kind: ConfigMap', flush=True); " \
              "os.kill(os.getpid(), signal.SIGKILL)"
    with pytest.raises(RenderError, match="killed by SIGKILL rendering app, and not by gitgate"):
        run_tool([sys.executable, "-c", suicide], cwd=tmp_path, display="app", tool="helm")


@pytest.mark.parametrize("cap_mib", [32, 64, 128, 384])
def test_helm_at_any_memory_cap_is_told_it_ran_out_of_memory(tmp_path, tools, cap_mib):
    """Which line Go's runtime prints at the cap depends on which allocation the cap refuses
    first (it differs between caps and between runs); every one of them is the memory cap."""
    from gitgate.errors import RenderError
    from gitgate.render.sandbox import Limits, run_tool

    chart_dir = write_files(tmp_path / "c", {**CHART, "templates/cm.yaml": growing_template(26)})
    with pytest.raises(RenderError) as caught:
        run_tool([tools.helm, "template", "r", str(chart_dir)], cwd=chart_dir,
                 display="app", tool="helm", limits=Limits(max_memory=cap_mib << 20))
    assert f"helm ran out of its {cap_mib} MiB of memory rendering app" in str(caught.value)


def test_a_tool_sees_the_go_settings_and_none_of_the_callers_environment(tmp_path, monkeypatch):
    """The render's Go runtime settings follow the memory cap; a GOGC, a token or a proxy of
    the process running gitgate never reaches the tool."""
    from gitgate.render.sandbox import Limits, run_tool

    monkeypatch.setenv("GOGC", "50")
    monkeypatch.setenv("GITHUB_TOKEN", "not-for-tools")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    show = "import json, os; print(json.dumps(dict(os.environ)))"
    done = run_tool([sys.executable, "-c", show], cwd=tmp_path, display="app", tool="helm",
                    limits=Limits(max_memory=400 << 20))
    seen = json.loads(done.stdout)
    assert seen["GOGC"] == "off" and int(seen["GOMEMLIMIT"]) == 100 << 20
    assert "GITHUB_TOKEN" not in seen and seen["HTTPS_PROXY"] == "http://127.0.0.1:9"
