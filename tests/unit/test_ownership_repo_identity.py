"""Which repo a folder is (one identity for every way of writing its remote, no credentials),
and the rule that an instance's records name one repo."""

from __future__ import annotations

import pytest

from gitgate.apply.instanceowner import refuse_other_repo
from gitgate.apply.inventory import Inventory
from gitgate.errors import OtherRepo, Reason
from gitgate.model.ownership import Origin, local_identity, repo_identity


@pytest.mark.parametrize("url", [
    "https://github.com/org/shop", "https://x-access-token:ghp_secret@github.com/org/shop.git",
    "ssh://git@github.com/org/shop.git/", "git@github.com:org/shop.git",
    "HTTPS://GitHub.com/org/shop"])
def test_every_way_of_writing_a_remote_is_one_identity_without_credentials(url):
    assert repo_identity(url) == "github.com/org/shop"


def test_a_port_is_kept_and_a_local_path_is_left_to_the_caller():
    assert repo_identity("ssh://git@git.corp:2222/team/x") == "git.corp:2222/team/x"
    assert repo_identity("/srv/git/x.git") is None
    assert repo_identity("file:///srv/git/x.git") is None
    assert repo_identity("C:/repos/x") is None
    assert local_identity("/srv/git/x.git") == local_identity("/srv/git/x/.git") == (
        "file:///srv/git/x")


def test_records_of_another_repo_or_folder_refuse_and_records_without_one_do_not():
    mine, theirs = Origin("github.com/org/a", "."), Origin("github.com/org/a", "staging")
    records = {"web": Inventory("web", origin=theirs), "legacy-db": Inventory("legacy-db"),
               "api": Inventory("api", origin=mine)}
    with pytest.raises(OtherRepo) as refused:
        refuse_other_repo(records, mine, "prod", adopt=False)
    assert refused.value.reason == Reason.OTHER_REPO
    assert "'prod'" in refused.value.message and "github.com/org/a (path staging)" in (
        refused.value.message)
    assert "web" in refused.value.message and "legacy-db" not in refused.value.message
    refuse_other_repo(records, mine, "prod", adopt=True)
    refuse_other_repo({"legacy-db": Inventory("legacy-db"),
                       "api": Inventory("api", origin=mine)}, mine, "prod", adopt=False)
    refuse_other_repo(records, Origin(), "prod", adopt=False)  # unknown: nothing to judge
