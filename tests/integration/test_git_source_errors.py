"""A Git source that cannot be fetched (real git, a port nobody answers) fails without the
credentials of its URL or its token in the message."""

from __future__ import annotations

import pytest

from gitgate.errors import SourceError
from gitgate.source.git import GitAuth, GitSource

pytestmark = pytest.mark.integration


def test_credentials_in_urls_and_tokens_never_appear_in_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_TOKEN", "tok-in-env-123")
    auth = GitAuth.from_settings(token_env="GIT_TOKEN")
    source = GitSource("http://someone:pa55word@127.0.0.1:9/config.git", "main",
                       tmp_path / "cache", auth)
    with pytest.raises(SourceError) as raised:
        source.sync()
    message = raised.value.message
    assert "pa55word" not in message and "tok-in-env-123" not in message
    assert "http://***@127.0.0.1:9/config.git" in message
    assert "pa55word" not in source.display_url
