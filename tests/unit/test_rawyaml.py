from gitgate.model import BundleOptions, Source, SourceKind
from gitgate.render.rawyaml import render_raw
from tests.conftest import memory_tree


def raw_source(*files):
    return Source("app", SourceKind.RAW, BundleOptions(namespace="ns"), "app", tuple(files))


def test_multi_document_files_skip_empty_documents_and_expand_lists():
    tree = memory_tree({"app/a.yaml": """
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: one}
        ---
        ---
        apiVersion: v1
        kind: List
        items:
          - {apiVersion: v1, kind: Secret, metadata: {name: two}}
          - {apiVersion: v1, kind: Secret, metadata: {name: three}}
    """})
    objects, problems = render_raw(raw_source("app/a.yaml"), tree)
    assert problems == []
    assert [o["metadata"]["name"] for o in objects] == ["one", "two", "three"]


def test_invalid_yaml_names_file_and_line():
    tree = memory_tree({"app/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n"})
    objects, problems = render_raw(raw_source("app/bad.yaml"), tree)
    assert objects == []
    (problem,) = problems
    # the line of the '[' the file never closes (not the line after the file's end), YAML's
    # own tokens kept whole (never taken for a value and cut), and what to do
    assert problem.file == "app/bad.yaml" and problem.line == 4
    assert problem.message == ("invalid YAML: the list '[' opened on line 4 is never closed "
                               "(expected ',' or ']', but got the end of the file); close it "
                               "with ']'")


def test_non_mapping_and_missing_fields_name_the_document_line():
    tree = memory_tree({"app/x.yaml": """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: fine}
        ---
        - just
        - a list
        ---
        apiVersion: v1
        kind: Secret
        metadata: {}
    """})
    _, problems = render_raw(raw_source("app/x.yaml"), tree)
    assert [(p.line, "mapping" in p.message or "metadata.name" in p.message)
            for p in problems] == [(5, True), (8, True)]
