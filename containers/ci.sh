#!/usr/bin/env bash
# CI's container step: build the image for real on a machine that reaches no image registry
# (FACTS §6: a Debian base made with debootstrap and imported into podman), run the canary and a
# grading run inside it, and require the grades to be byte-identical to those made outside.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=$(cd "${IFAUDIT_SHARED:-../shared}" && pwd)
work=$(mktemp -d)
inputs=containers/build-inputs
trap 'find "$inputs" -mindepth 1 ! -name README.md -exec rm -rf {} + ; rm -rf "$work"' EXIT

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "podman, debootstrap, runc from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq podman debootstrap runc uidmap >/dev/null
export CONTAINERS_CONF=$work/containers.conf
printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n' \
    > "$CONTAINERS_CONF"

step "base image: debootstrap bookworm, podman import (fresh every time: CI builds for real)"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
tar -C "$work/rootfs" -c . | podman import - localhost/bookworm-min >/dev/null

step "build inputs: the host's extra CA certificates, NLTK data and dataset mirror (offline)"
mkdir -p "$inputs/extra-ca" "$inputs/data"
cp /usr/local/share/ca-certificates/*.crt "$inputs/extra-ca/" 2>/dev/null || true
cp -r "$shared/data/nltk" "$inputs/nltk"
cp -r "$shared/data/ifeval" "$inputs/data/ifeval"

step "build (the canary is the last build step)"
containers/build.sh --no-cache --build-arg BASE=localhost/bookworm-min --build-arg GRADER=stand-in -t localhost/ifaudit:ci
podman image inspect localhost/ifaudit:ci --format '{{json .Labels}}'

step "inside the image: canary, then grading Google's GPT-4 responses"
mkdir -p "$work/out" && chmod 777 "$work/out"
run() { podman run --rm -v "$shared/data:/data:ro" -v "$work/out:/out" localhost/ifaudit:ci "$@"; }
run ifaudit selfcheck --config /opt/ifaudit/config.yaml --mirror /data --offline --out /out/canary.json
run ifaudit grade --quiet --prompts /data/ifeval/input_data.jsonl \
    --responses /data/ifeval/input_response_data_gpt4_20231107_145030.jsonl --out /out/grades-container.jsonl

step "outside the image: the same grading"
IFAUDIT_RESOURCES="$work/resources" IFAUDIT_NLTK_MIRROR="$shared/data/nltk" .venv/bin/ifaudit grade --quiet \
    --grader stand-in --prompts "$shared/data/ifeval/input_data.jsonl" \
    --responses "$shared/data/ifeval/input_response_data_gpt4_20231107_145030.jsonl" --out "$work/out/grades-host.jsonl"

step "compare"
sha256sum "$work/out/grades-container.jsonl" "$work/out/grades-host.jsonl"
cmp "$work/out/grades-container.jsonl" "$work/out/grades-host.jsonl"
echo "container step: grades inside and outside the image are byte-identical"
