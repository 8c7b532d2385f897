"""Speak the two ways charts are published: a chart repository (`index.yaml`, and each
version's archive at the URLs it lists) and an OCI registry (the distribution API: tags,
the manifest, the chart's layer and its provenance layer as blobs). Every request goes
through `transport`, and every URL is checked against the allow-list for the asking source
first."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urljoin, urlsplit

from gitgate.charts.download import Answer, Secret, Transport
from gitgate.errors import ChartError, GitgateError, Reason
from gitgate.model.chartspec import ChartPolicy, ChartRef, ChartRepository
from gitgate.yamlio import YamlLimits, YamlSyntaxError, load_documents

HELM_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
PROVENANCE_LAYER = "application/vnd.cncf.helm.chart.provenance.v1.prov"
MANIFEST_TYPES = "application/vnd.oci.image.manifest.v1+json"
MAX_INDEX_BYTES = 64 << 20  # a chart repository's index.yaml
MAX_SMALL_BYTES = 4 << 20  # a tag list, a manifest, a token
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')

Secrets = Callable[[ChartRepository], Secret | None]


@dataclass(frozen=True)
class Published:
    """One version of a chart as its repository lists it."""

    version: str
    digest: str | None  # sha256:<hex> when the repository says (an OCI layer, an index entry)
    url: str  # where its archive is


class Remote:
    """The repositories one source may fetch from (`policy`, `tenant`)."""

    def __init__(self, transport: Transport, policy: ChartPolicy, tenant: str,
                 secrets: Secrets) -> None:
        self.transport = transport
        self.policy = policy
        self.tenant = tenant
        self.secrets = secrets

    def entry(self, ref: ChartRef) -> ChartRepository:
        """The allow-list entry that lets this source use `ref`; ChartError before anything
        is sent when there is none."""
        url = f"{ref.repo}/{ref.chart}" if ref.oci else ref.repo
        found = self.policy.allowing(url, self.tenant)
        if found is None:
            listed = self.policy.listing(url)
            why = (f"gitgate.yaml's charts.repositories entry {listed.label!r} is not open to "
                   f"{self.tenant or 'this folder'}" if listed is not None else
                   "it is not in gitgate.yaml's charts.repositories")
            raise ChartError(f"{ref.where}: {why}; nothing is fetched from it",
                             reason=Reason.CHART_NOT_ALLOWED)
        return found

    def _allowed(self, url: str) -> ChartRepository | None:
        return self.policy.allowing(url, self.tenant)

    def _secret(self, entry: ChartRepository) -> Secret | None:
        try:
            return self.secrets(entry)
        except GitgateError as exc:
            raise ChartError(exc.message, reason=Reason.CHART_FETCH_FAILED) from None

    # -- chart repositories ---------------------------------------------------------------

    def _index(self, ref: ChartRef, entry: ChartRepository) -> list[Published]:
        url = ref.repo + "/index.yaml"
        answer = self._ok(self.transport.get(url, self._allowed, max_bytes=MAX_INDEX_BYTES,
                                             secret=self._secret(entry)), ref)
        try:
            docs = list(load_documents(answer.data.decode("utf-8"),
                                       limits=YamlLimits.from_env(max_bytes=MAX_INDEX_BYTES)))
            index = docs[0].data if docs else None
        except (UnicodeDecodeError, YamlSyntaxError) as exc:
            raise ChartError(f"{url}: the index is not YAML ({exc})",
                             reason=Reason.CHART_FETCH_FAILED) from None
        entries = (index.get("entries") or {}).get(ref.chart) if isinstance(index, dict) else None
        if not isinstance(entries, list):
            raise ChartError(f"{ref.where}: the repository's index lists no such chart",
                             reason=Reason.CHART_FETCH_FAILED)
        found = []
        for item in entries:
            if not isinstance(item, dict) or not isinstance(item.get("version"), str):
                continue
            urls = item.get("urls") or []
            if not urls or not isinstance(urls[0], str):
                continue
            digest = item.get("digest")
            found.append(Published(item["version"], f"sha256:{digest}" if isinstance(
                digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest) else None,
                urljoin(ref.repo + "/", urls[0])))
        return found

    # -- OCI registries -------------------------------------------------------------------

    @staticmethod
    def _registry(ref: ChartRef) -> tuple[str, str]:
        """(https://host, repository path) of an oci:// chart."""
        rest = ref.repo.removeprefix("oci://")
        host, _, path = rest.partition("/")
        return f"https://{host}", f"{path}/{ref.chart}".strip("/")

    def _oci_get(self, ref: ChartRef, entry: ChartRepository, path: str, *, max_bytes: int,
                 accept: str | None = None) -> Answer:
        """GET a registry path; a 401 that asks for a bearer token gets one from the realm
        it names (which must be allowed too), once."""
        base, repository = self._registry(ref)
        mine = f"{base}/v2/{repository}/"

        def ask(url: str) -> ChartRepository | None:
            return entry if url.startswith(mine) else self._allowed(url)

        url = f"{base}/v2/{repository}/{path}"
        secret = self._secret(entry)
        answer = self.transport.get(url, ask, max_bytes=max_bytes, secret=secret, accept=accept)
        challenge = answer.headers.get("www-authenticate", "")
        if answer.status == 401 and challenge.lower().startswith("bearer "):
            token = self._token(challenge, secret)
            answer = self.transport.get(url, ask, max_bytes=max_bytes, accept=accept,
                                        auth=f"Bearer {token}")
        return self._ok(answer, ref)

    def _token(self, challenge: str, secret: Secret | None) -> str:
        said = dict(_CHALLENGE.findall(challenge))
        realm = said.pop("realm", "")
        if not realm.startswith("https://"):
            raise ChartError("the registry asks for a token from a realm that is not https",
                             reason=Reason.CHART_FETCH_FAILED)
        url = realm + ("&" if urlsplit(realm).query else "?") + urlencode(said)
        answer = self.transport.get(url, self._allowed, max_bytes=MAX_SMALL_BYTES,
                                    secret=secret)
        if answer.status != 200:
            raise ChartError(f"the registry's token service answered {answer.status}",
                             reason=Reason.CHART_FETCH_FAILED)
        try:
            data = json.loads(answer.data)
            token = data.get("token") or data.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise ChartError("the registry's token service gave no token",
                             reason=Reason.CHART_FETCH_FAILED)
        return token

    def _oci_versions(self, ref: ChartRef, entry: ChartRepository) -> list[str]:
        answer = self._oci_get(ref, entry, "tags/list", max_bytes=MAX_SMALL_BYTES)
        try:
            tags = json.loads(answer.data).get("tags") or []
        except (ValueError, AttributeError):
            tags = None
        if not isinstance(tags, list):
            raise ChartError(f"{ref.where}: the registry's tag list is not JSON",
                             reason=Reason.CHART_FETCH_FAILED)
        # OCI tags cannot hold '+': helm publishes build metadata with '_'
        return [str(t).replace("_", "+") for t in tags if isinstance(t, str)]

    def _oci_layers(self, ref: ChartRef, entry: ChartRepository,
                    version: str) -> dict[str, str]:
        """The layers of the chart's manifest at `version`: {media type: digest}."""
        answer = self._oci_get(ref, entry, f"manifests/{quote(version.replace('+', '_'))}",
                               max_bytes=MAX_SMALL_BYTES, accept=MANIFEST_TYPES)
        try:
            layers = json.loads(answer.data).get("layers") or []
        except (ValueError, AttributeError):
            layers = []
        found: dict[str, str] = {}
        for layer in layers if isinstance(layers, list) else []:
            if isinstance(layer, dict) and isinstance(layer.get("mediaType"), str) and (
                    re.fullmatch(r"sha256:[0-9a-f]{64}", str(layer.get("digest")))):
                found.setdefault(layer["mediaType"], str(layer["digest"]))
        return found

    def _oci_layer(self, ref: ChartRef, entry: ChartRepository, version: str) -> str:
        digest = self._oci_layers(ref, entry, version).get(HELM_LAYER)
        if digest is None:
            raise ChartError(f"{ref.where}:{version} holds no helm chart layer",
                             reason=Reason.CHART_FETCH_FAILED)
        return digest

    def _oci_provenance(self, ref: ChartRef, entry: ChartRepository, version: str) -> bytes:
        """The provenance layer `helm push` uploads beside the chart when a `.prov` lies next
        to its archive (helm's own `pull --verify` reads the same layer)."""
        digest = self._oci_layers(ref, entry, version).get(PROVENANCE_LAYER)
        if digest is None:
            raise ChartError(f"{ref.where} {version}: {entry.label} asks for verify: true, "
                             "and the registry holds no provenance layer for it",
                             reason=Reason.CHART_UNVERIFIED)
        data = self._oci_get(ref, entry, f"blobs/{digest}", max_bytes=MAX_SMALL_BYTES).data
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            raise ChartError(f"{ref.where} {version}: the registry's provenance blob is not "
                             f"the {digest} its manifest names", reason=Reason.CHART_UNVERIFIED)
        return data

    # -- both -----------------------------------------------------------------------------

    def versions(self, ref: ChartRef) -> list[str]:
        entry = self.entry(ref)
        if ref.oci:
            return self._oci_versions(ref, entry)
        return [p.version for p in self._index(ref, entry)]

    def published(self, ref: ChartRef, version: str) -> Published:
        """Where the archive of `version` is, and its digest when the repository says."""
        entry = self.entry(ref)
        if ref.oci:
            digest = self._oci_layer(ref, entry, version)
            base, repository = self._registry(ref)
            return Published(version, digest, f"{base}/v2/{repository}/blobs/{digest}")
        for found in self._index(ref, entry):
            if found.version == version:
                return found
        raise ChartError(f"{ref.where}: the repository lists no version {version}",
                         reason=Reason.CHART_FETCH_FAILED)

    def archive(self, ref: ChartRef, version: str, digest: str | None,
                max_bytes: int) -> bytes:
        """The chart's archive, at most `max_bytes`. An OCI chart with a known digest is
        fetched as that blob directly (content-addressed: no tag is read)."""
        entry = self.entry(ref)
        if ref.oci:
            digest = digest or self._oci_layer(ref, entry, version)
            return self._oci_get(ref, entry, f"blobs/{digest}", max_bytes=max_bytes).data
        where = self.published(ref, version)
        host = urlsplit(ref.repo).netloc
        answer = self.transport.get(
            where.url, self._allowed, max_bytes=max_bytes,
            secret=self._secret(entry) if urlsplit(where.url).netloc == host else None)
        return self._ok(answer, ref).data

    def provenance(self, ref: ChartRef, version: str) -> bytes:
        """The provenance file a chart repository publishes beside the archive
        (`<archive URL>.prov`), or a registry as the manifest's provenance layer; ChartError
        (ChartUnverified) when it offers none."""
        entry = self.entry(ref)
        if ref.oci:
            return self._oci_provenance(ref, entry, version)
        where = self.published(ref, version)
        host = urlsplit(ref.repo).netloc
        answer = self.transport.get(
            where.url + ".prov", self._allowed, max_bytes=MAX_SMALL_BYTES,
            secret=self._secret(entry) if urlsplit(where.url).netloc == host else None)
        if answer.status == 404:
            raise ChartError(f"{ref.where} {version}: {entry.label} asks for verify: true, "
                             "and the repository offers no provenance file for it",
                             reason=Reason.CHART_UNVERIFIED)
        return self._ok(answer, ref).data

    @staticmethod
    def _ok(answer: Answer, ref: ChartRef) -> Answer:
        if answer.status == 200:
            return answer
        what = {401: "refused the credentials (or asked for some)", 403: "refused access",
                404: "has no such chart or version"}.get(answer.status,
                                                        f"answered {answer.status}")
        raise ChartError(f"{ref.where}: the repository {what}",
                         reason=Reason.CHART_FETCH_FAILED)
