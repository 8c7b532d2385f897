"""A chart repository's credentials, from where gitgate.yaml points: a file on gitgate's host
(a mounted Secret: `username` and `password`, or `token`, as YAML or JSON), or a Secret in
gitgate's namespace, read by whoever runs the pass (`secret_reader`). Never from the repo.
Messages name the reference, never what it holds."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gitgate.charts.download import Secret
from gitgate.errors import ChartError, Reason
from gitgate.model.chartspec import ChartRepository
from gitgate.yamlio import YamlSyntaxError, load_one

MAX_CREDENTIALS_BYTES = 64 << 10
SecretReader = Callable[[str], Mapping[str, str]]  # a Secret's name -> its data, decoded


def cluster_secrets(get: Callable[[str, str, str, str], Mapping[str, Any] | None],
                    namespace: str) -> SecretReader:
    """Secrets of gitgate's namespace, read through the API server (`get`: apiVersion, kind,
    namespace, name -> the object or None)."""

    def read(name: str) -> Mapping[str, str]:
        found = get("v1", "Secret", namespace, name)
        if found is None:
            raise LookupError(name)
        data = found.get("data") or {}
        try:
            return {str(k): base64.b64decode(str(v)).decode("utf-8") for k, v in data.items()}
        except (binascii.Error, UnicodeDecodeError):
            raise LookupError(name) from None

    return read


def _secret_of(data: object, where: str) -> Secret:
    if isinstance(data, Mapping):
        token = data.get("token")
        user, password = data.get("username"), data.get("password")
        if isinstance(token, str) and token:
            return Secret(token=token.strip())
        if isinstance(user, str) and isinstance(password, str) and user:
            return Secret(username=user.strip(), password=password.strip())
    raise ChartError(f"{where} must hold username and password, or token",
                     reason=Reason.CHART_FETCH_FAILED)


def credentials_reader(secret_reader: SecretReader | None = None
                       ) -> Callable[[ChartRepository], Secret | None]:
    """What each allow-list entry's credentials hold (None: it names none)."""

    def read(entry: ChartRepository) -> Secret | None:
        if entry.credentials_file is not None:
            where = f"the credentials file of {entry.label} ({entry.credentials_file})"
            try:
                raw = Path(entry.credentials_file).read_bytes()[:MAX_CREDENTIALS_BYTES]
                data = load_one(raw.decode("utf-8"))
            except (OSError, UnicodeDecodeError, YamlSyntaxError):
                raise ChartError(f"{where} cannot be read as YAML or JSON",
                                 reason=Reason.CHART_FETCH_FAILED) from None
            return _secret_of(data, where)
        if entry.credentials_secret is not None:
            where = f"the Secret {entry.credentials_secret} (credentials of {entry.label})"
            if secret_reader is None:
                raise ChartError(f"{where} is read from the API server: run with "
                                 "--kubeconfig, or name a file instead",
                                 reason=Reason.CHART_FETCH_FAILED)
            try:
                data = secret_reader(entry.credentials_secret)
            except Exception:  # what the API said may quote the request: not repeated
                raise ChartError(f"{where} cannot be read",
                                 reason=Reason.CHART_FETCH_FAILED) from None
            return _secret_of(data, where)
        return None

    return read
