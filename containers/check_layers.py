"""Fail if any layer of a saved image holds a build input or one of the given CA certificates.

    python3 containers/check_layers.py IMAGE.tar CERT.crt...

IMAGE.tar is `podman save --format docker-archive`. A later `rm` cannot remove bytes from an
earlier layer, so every layer is read in full: a path under the build's scratch folders, or a
file whose bytes contain a certificate's base64 body, is named, and the exit status is 1."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

FORBIDDEN_PREFIXES = ("tmp/build-inputs", "tmp/build/", "tmp/ca.pem", "opt/ifaudit/build")
FORBIDDEN_NAMES = ("requirements.lock", "requirements-runtime.lock", "requirements-stand-in.lock")


def cert_body(path: Path) -> bytes:
    """The base64 lines of a PEM certificate: the bytes any bundle holding it would contain."""
    lines = path.read_bytes().splitlines()
    body = [line.strip() for line in lines if line.strip() and not line.startswith(b"-----")]
    return b"".join(body[:3])  # three lines (192 characters) identify a certificate


def findings(layer: tarfile.TarFile, name: str, certs: dict[str, bytes]) -> list[str]:
    found = []
    for member in layer:
        path = member.name.lstrip("./")
        if path.startswith(FORBIDDEN_PREFIXES) or path.rsplit("/", 1)[-1] in FORBIDDEN_NAMES:
            found.append(f"{name}: build input {path}")
        if member.isfile() and certs:
            data = layer.extractfile(member).read().replace(b"\n", b"")
            found += [f"{name}: {path} holds {cert}" for cert, body in certs.items() if body in data]
    return found


def main(archive: str, *cert_files: str) -> int:
    certs = {Path(c).name: cert_body(Path(c)) for c in cert_files}
    problems: list[str] = []
    with tarfile.open(archive) as image:
        manifest = json.load(image.extractfile("manifest.json"))
        layers = manifest[0]["Layers"]
        for name in layers:
            with tarfile.open(fileobj=image.extractfile(name)) as layer:
                problems += findings(layer, name, certs)
    for problem in problems:
        print(problem)
    print(f"{len(layers)} layers read; {len(certs)} host CA certificates and the build inputs looked for; "
          f"{len(problems)} found")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
