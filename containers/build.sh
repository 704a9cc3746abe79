#!/usr/bin/env bash
# Build the ifaudit image with honest labels: the grader commit from the pin and the sha256 of
# the lock that the build installs (the Dockerfile checks that they match).
#   containers/build.sh [ENGINE_ARGS...]      e.g. --build-arg BASE=localhost/bookworm-min -t ifaudit:dev
# ENGINE (default: podman if present, else docker) is the build tool.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
lock_sha256=$(sha256sum requirements.lock | cut -d' ' -f1)
grader_commit=$(sed -n 's/^commit = "\(.*\)"/\1/p' vendor/google_ifeval/pin.toml)
exec "$engine" build --build-arg LOCK_SHA256="$lock_sha256" --build-arg GRADER_COMMIT="$grader_commit" "$@" .
