"""Charts that come from elsewhere: a published chart a bundle names, the lock that pins it,
and the platform's list of where charts may come from. Plain, frozen."""

from __future__ import annotations

from dataclasses import dataclass

CHART_LOCK = "chart.lock.yaml"  # beside bundle.yaml: what `gitgate lock` resolved
OCI = "oci://"
PUBLISHED = ""  # the `dependency` of a lock entry for the bundle's own published chart


LOOPBACK_HOSTS = ("127.0.0.1", "[::1]")  # plain http is spoken to these only


def _host_name(host: str) -> str:
    """`host[:port]` without its port (an IPv6 literal keeps its brackets)."""
    return host[:host.index("]") + 1] if host.startswith("[") and "]" in host else \
        host.partition(":")[0]


def url_parts(url: str) -> tuple[str, str, str] | None:
    """(scheme, host[:port] in lower case, path) of an https or oci URL, or of an http URL
    to this machine's loopback address (127.0.0.1, [::1]: a chart repository served on the
    same host, which no network carries); None for anything else, and for one with user
    information, a query, a fragment or a `..` segment (no URL of a chart needs them, and
    each is a way to say one host and reach another)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("https", "oci", "http") or any(c in rest for c in "@?#\\ "):
        return None
    host, _, path = rest.partition("/")
    path = "/" + path
    if not host or ".." in path.split("/"):
        return None
    if scheme == "http" and _host_name(host.lower()) not in LOOPBACK_HOSTS:
        return None
    return scheme, host.lower(), path


def is_chart_repository(url: str) -> bool:
    """A chart repository's URL gitgate may fetch from: https, or http on loopback."""
    parts = url_parts(url)
    return parts is not None and parts[0] != "oci"


@dataclass(frozen=True)
class ChartRef:
    """A chart to fetch: from a chart repository (`repo` is its https URL, `chart` the name)
    or from an OCI registry (`repo` is `oci://host/path`, `chart` the last segment).
    `version` is what the repo asks for: an exact version or a range."""

    repo: str
    chart: str
    version: str

    @property
    def oci(self) -> bool:
        return self.repo.startswith(OCI)

    @property
    def where(self) -> str:
        """The chart's place, as a person reads it: `oci://host/path/name` or `repo name`."""
        return f"{self.repo}/{self.chart}" if self.oci else f"{self.repo} {self.chart}"


@dataclass(frozen=True)
class LockedChart:
    """One line of a chart lock: what `ref` resolved to. `dependency` is the Chart.yaml
    dependency it is for (PUBLISHED: the bundle's own chart); `digest` is the sha256 of
    the chart archive (`sha256:<hex>`)."""

    dependency: str
    ref: ChartRef
    version: str
    digest: str

    @property
    def hex(self) -> str:
        return self.digest.removeprefix("sha256:")


@dataclass(frozen=True)
class ChartRepository:
    """One place charts may come from (`gitgate.yaml` `charts.repositories`): `url` is an
    https URL or `oci://host/path`; a chart is from it when its URL is at or below it.
    Credentials and the CA are named, never held: a file on gitgate's host, or a Secret."""

    url: str
    name: str = ""
    credentials_file: str | None = None
    credentials_secret: str | None = None
    ca_file: str | None = None
    tenants: tuple[str, ...] | None = None  # None: every source may use it
    # `verify: true`: each chart's provenance file (`<archive>.prov`) must verify with the
    # OpenPGP keyring named here (a file on gitgate's host, or a Secret's `keyring` key)
    verify: bool = False
    keyring_file: str | None = None
    keyring_secret: str | None = None

    def covers(self, url: str) -> bool:
        mine, theirs = url_parts(self.url), url_parts(url)
        if mine is None or theirs is None or mine[:2] != theirs[:2]:
            return False
        base = mine[2].rstrip("/")
        return theirs[2] == base or theirs[2].startswith(base + "/")

    @property
    def label(self) -> str:
        return self.name or self.url


DEFAULT_MAX_CHART_BYTES = 16 << 20


@dataclass(frozen=True)
class ChartPolicy:
    """Where charts may come from, and how large one may be (`charts.maxSize`)."""

    repositories: tuple[ChartRepository, ...] = ()
    max_bytes: int = DEFAULT_MAX_CHART_BYTES

    def allowing(self, url: str, tenant: str) -> ChartRepository | None:
        """The entry that lets `tenant` fetch `url`; None: refused."""
        for entry in self.repositories:
            if entry.covers(url) and (entry.tenants is None or tenant in entry.tenants):
                return entry
        return None

    def listing(self, url: str) -> ChartRepository | None:
        """The entry `url` is under, whoever asks."""
        return next((e for e in self.repositories if e.covers(url)), None)
