#!/usr/bin/env bash
# CI's container step: build the image for real on a machine that reaches no image registry
# (FACTS §6: a Debian base made with debootstrap and imported into podman), show that no layer
# holds a build input or a host CA certificate, print its size, run the canary and a grading run
# inside it, and require the grades to be byte-identical to those made outside.
# The grader is the pinned upstream when ../shared/upstream/google_ifeval holds its files, else
# the labelled stand-in.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=$(cd "${IFAUDIT_SHARED:-../shared}" && pwd)
work=$(mktemp -d)
inputs=containers/build-inputs
trap 'find "$inputs" -mindepth 1 ! -name README.md -exec rm -rf {} + ; rm -rf "$work"' EXIT

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "podman, debootstrap, runc from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
apt-get install -o DPkg::Lock::Timeout=600 -y -qq podman debootstrap runc uidmap >/dev/null
export CONTAINERS_CONF=$work/containers.conf
printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n' \
    > "$CONTAINERS_CONF"

step "base image: debootstrap bookworm, podman import (fresh every time: CI builds for real)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
# As slim as a python:*-slim base: no package lists, package cache, documentation or locales.
rm -rf "$work"/rootfs/var/cache/apt/* "$work"/rootfs/var/lib/apt/lists/* \
    "$work"/rootfs/usr/share/{doc,man,info,locale}/*
tar -C "$work/rootfs" -c . | podman import - localhost/bookworm-min >/dev/null
echo "base image size: $(podman image inspect localhost/bookworm-min --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"

step "build inputs: the host's extra CA certificates, NLTK data, dataset mirror, grader (offline)"
mkdir -p "$inputs/extra-ca" "$inputs/data"
cp /usr/local/share/ca-certificates/*.crt "$inputs/extra-ca/" 2>/dev/null || true
cp -r "$shared/data/nltk" "$inputs/nltk"
cp -r "$shared/data/ifeval" "$inputs/data/ifeval"
export GRADER=stand-in
if [ -d "$shared/upstream/google_ifeval/instruction_following_eval" ]; then
    GRADER=upstream
    cp -r "$shared/upstream/google_ifeval" "$inputs/grader"
fi
echo "grader: $GRADER"

step "build (the canary is the last build step)"
BASE=localhost/bookworm-min containers/build.sh --no-cache -t localhost/ifaudit:ci
podman image inspect localhost/ifaudit:ci --format '{{json .Config.Labels}}'
podman image inspect localhost/ifaudit:ci --format '{{json .Config.Env}}'
echo "image size: $(podman image inspect localhost/ifaudit:ci --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"

step "every layer: no build input, no host CA certificate"
podman history --no-trunc --format '{{.Size}}\t{{.CreatedBy}}' localhost/ifaudit:ci | cut -c1-160
podman save --format docker-archive -o "$work/image.tar" localhost/ifaudit:ci
python3 containers/check_layers.py "$work/image.tar" "$inputs"/extra-ca/*.crt
rm "$work/image.tar"

step "inside the image: canary, then grading Google's GPT-4 responses"
mkdir -p "$work/out" && chmod 777 "$work/out"
run() { podman run --rm -v "$shared/data:/data:ro" -v "$work/out:/out" localhost/ifaudit:ci "$@"; }
run ifaudit selfcheck --config /opt/ifaudit/config.yaml --mirror /data --offline --out /out/canary.json
run ifaudit grade --quiet --prompts /data/ifeval/input_data.jsonl \
    --responses /data/ifeval/input_response_data_gpt4_20231107_145030.jsonl --out /out/grades-container.jsonl

step "outside the image: the same grading"
source_args=(); [ "$GRADER" = upstream ] && source_args=(--offline --from "$shared/upstream/google_ifeval")
IFAUDIT_RESOURCES="$work/resources" IFAUDIT_NLTK_MIRROR="$shared/data/nltk" .venv/bin/ifaudit grade --quiet \
    --grader "$GRADER" "${source_args[@]}" --prompts "$shared/data/ifeval/input_data.jsonl" \
    --responses "$shared/data/ifeval/input_response_data_gpt4_20231107_145030.jsonl" --out "$work/out/grades-host.jsonl"

step "compare"
sha256sum "$work/out/grades-container.jsonl" "$work/out/grades-host.jsonl"
cmp "$work/out/grades-container.jsonl" "$work/out/grades-host.jsonl"
echo "container step: grades inside and outside the image are byte-identical"
