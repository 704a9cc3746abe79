#!/usr/bin/env bash
# Build the ifaudit image with honest labels: the lock that the build installs (its sha256; the
# Dockerfile checks it), the grader kind (and, only for upstream, its pinned commit), and the OCI
# labels (version, revision, source, created from SOURCE_DATE_EPOCH, base digest).
#   containers/build.sh [ENGINE_ARGS...]      e.g. --build-arg BASE=localhost/bookworm-min -t ifaudit:dev
# GRADER (default: upstream; or stand-in) picks the final stage and the lock; ENGINE (default:
# podman if present, else docker) is the build tool; BASE overrides the Dockerfile's base.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
grader=${GRADER:-upstream}
case "$grader" in
    upstream) lock=requirements-runtime.lock ;;
    stand-in) lock=requirements-stand-in.lock ;;
    *) echo "containers/build.sh: GRADER must be upstream or stand-in, not '$grader'" >&2; exit 2 ;;
esac
base=${BASE:-$(sed -n 's/^ARG BASE=//p' Dockerfile)}
# A reference pinned by digest names it; a local image (e.g. the debootstrap base) has its own.
case "$base" in
    *@sha256:*) base_digest=${base##*@} ;;
    *) base_digest=$("$engine" image inspect --format '{{.Digest}}' "$base") ;;
esac
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
args=(
    --build-arg BASE="$base" --target "$grader"
    --build-arg GRADER="$grader" --build-arg LOCK="$lock"
    --build-arg LOCK_SHA256="$(sha256sum "$lock" | cut -d' ' -f1)"
    --build-arg VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)"
    --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
    --build-arg SOURCE="${IFAUDIT_SOURCE_URL:-$(git config --get remote.origin.url || echo unknown)}"
    --build-arg CREATED="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
    --build-arg BASE_DIGEST="$base_digest"
)
[ "$grader" = upstream ] && args+=(--build-arg GRADER_COMMIT="$(sed -n 's/^commit = "\(.*\)"/\1/p' vendor/google_ifeval/pin.toml)")
exec "$engine" build "${args[@]}" "$@" .
