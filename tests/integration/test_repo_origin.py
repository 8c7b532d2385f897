"""Which repo a checkout is (`source.origin.repo_origin`), read with real git: a clone names
the repo it came from as that repo names itself, a folder outside any repo is itself."""

from __future__ import annotations

import pytest

from gitgate.model.ownership import Origin
from gitgate.source.origin import repo_origin
from tests.conftest import committed_repo, write_files

pytestmark = pytest.mark.integration


def test_a_clone_names_the_repo_it_came_from_as_that_repo_names_itself(tmp_path):
    first = write_files(tmp_path / "first", {"deploy/gitgate.yaml": "{}\n"})
    repo = committed_repo(first)
    clone = tmp_path / "clone"
    repo.clone(str(clone))
    assert repo_origin(first / "deploy") == Origin(f"file://{first.resolve()}", "deploy")
    assert repo_origin(clone / "deploy") == repo_origin(first / "deploy")
    assert repo_origin(first) == Origin(f"file://{first.resolve()}", ".")
    outside = write_files(tmp_path / "plain", {"gitgate.yaml": "{}\n"})
    assert repo_origin(outside) == Origin(f"file://{outside.resolve()}", ".")
