"""How a request that got no HTTP answer is named (`apierrors.transport_error`): what the
user is told to check, and whether the request may go again. Plain exceptions, as the socket,
ssl and urllib3 raise them."""

from __future__ import annotations

import ssl

import pytest
import urllib3.exceptions

from gitgate.apiserver.apierrors import Timeouts, transport_error
from gitgate.errors import Reason

SERVER = "https://karmada.example:5443"


def wrapped(cause: BaseException) -> BaseException:
    """`cause` as urllib3 hands it on: its own SSLError, raised from the ssl module's."""
    try:
        try:
            raise cause
        except BaseException as exc:
            raise urllib3.exceptions.SSLError(str(exc)) from exc
    except urllib3.exceptions.SSLError as outer:
        return outer


@pytest.mark.parametrize("exc", [
    ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
    ssl.SSLZeroReturnError(6, "TLS/SSL connection has been closed (EOF)"),
    wrapped(ssl.SSLEOFError(8, "EOF occurred in violation of protocol")),
    BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset by peer")])
def test_a_connection_closed_under_a_request_is_no_tls_failure_and_may_go_again(exc):
    error, retryable = transport_error(exc, SERVER, Timeouts())
    assert error.message == f"the connection to {SERVER} was closed before an answer"
    assert error.reason is Reason.API_UNREACHABLE and retryable


@pytest.mark.parametrize("exc", [
    ssl.SSLCertVerificationError(1, "certificate verify failed: self-signed certificate"),
    wrapped(ssl.SSLCertVerificationError(1, "certificate verify failed")),
    ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")])
def test_a_refused_handshake_points_at_the_kubeconfig_and_is_not_retried(exc):
    error, retryable = transport_error(exc, SERVER, Timeouts())
    assert f"TLS handshake with {SERVER} failed" in error.message
    assert "certificate-authority-data" in error.message and not retryable
