# The ifaudit image: a grading environment whose every byte was verified before it was made.
# Build it with containers/build.sh: it picks the lock and the final stage for the grader kind
# and passes the labels below; see docs/container.md.
#
# Three stages. `build` is thrown away: the host's extra CA certificates, the build inputs, pip
# and the lock live only there. The final stage (`upstream` or `stand-in`, chosen with --target)
# holds the base, one copy of /opt/ifaudit and the user; the canary is its last step.
#
# BASE: python:3.11-slim-bookworm, pinned by digest. The digest is the one public projects pin;
# no image registry was reachable where this file was written to re-check it. Any Debian
# bookworm image with python3, python3-venv and ca-certificates works, e.g. one made with
# debootstrap and `podman import` (docs/container.md).
ARG BASE=docker.io/library/python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

FROM ${BASE} AS build
# requirements-runtime.lock (upstream) or requirements-stand-in.lock: runtime dependencies only.
ARG LOCK=requirements-runtime.lock
ARG LOCK_SHA256
ARG GRADER=upstream
ARG GRADER_COMMIT
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# Optional inputs (containers/build-inputs/): extra-ca/*.crt for networks that need them, and,
# for offline builds, grader/ (the pinned files), nltk/ (an NLTK_DATA folder) and data/ (a
# dataset mirror laid out as config/config.yaml's `mirror:` paths). Only this stage sees them.
COPY containers/build-inputs/ /tmp/build-inputs/
RUN cat /etc/ssl/certs/ca-certificates.crt /tmp/build-inputs/extra-ca/*.crt > /tmp/ca.pem 2>/dev/null \
 || cp /etc/ssl/certs/ca-certificates.crt /tmp/ca.pem

# The hash-locked environment; the label must name the lock that is installed. pip and
# setuptools leave the venv afterwards: the image installs nothing at run time. No bytecode for
# all of it (130 MB): the canary below compiles what grading imports.
COPY ${LOCK} /tmp/build/requirements.lock
COPY pyproject.toml README.md /tmp/build/
COPY src/ /tmp/build/src/
RUN set -eu; \
    echo "${LOCK_SHA256}  /tmp/build/requirements.lock" | sha256sum -c -; \
    python3 -m venv /opt/ifaudit/venv; \
    export PIP_CERT=/tmp/ca.pem; \
    /opt/ifaudit/venv/bin/pip install --no-compile --require-hashes -r /tmp/build/requirements.lock; \
    /opt/ifaudit/venv/bin/pip install --no-compile --no-deps /tmp/build; \
    /opt/ifaudit/venv/bin/pip uninstall --yes pip setuptools
COPY vendor/google_ifeval/pin.toml /opt/ifaudit/pin.toml
COPY config/config.yaml /opt/ifaudit/config.yaml

# Materialize and verify the grader and the NLTK data; a build that cannot get verified bytes
# stops here. The verified upstream files stay in the image as a local source for every run.
RUN set -eu; \
    export PATH=/opt/ifaudit/venv/bin:$PATH IFAUDIT_PIN=/opt/ifaudit/pin.toml \
        SSL_CERT_FILE=/tmp/ca.pem REQUESTS_CA_BUNDLE=/tmp/ca.pem; \
    grader_source=""; [ -d /tmp/build-inputs/grader ] && grader_source="--from /tmp/build-inputs/grader"; \
    nltk_mirror=""; [ -d /tmp/build-inputs/nltk ] && nltk_mirror="--nltk-mirror /tmp/build-inputs/nltk"; \
    IFAUDIT_RESOURCES=/tmp/build/resources NLTK_DATA= \
        ifaudit vendor --grader "${GRADER}" ${grader_source} ${nltk_mirror} --record /opt/ifaudit/environment.json; \
    mv /tmp/build/resources/nltk_data /opt/ifaudit/nltk_data; \
    if [ "${GRADER}" = upstream ]; then \
        mv "/tmp/build/resources/vendor/google_ifeval/${GRADER_COMMIT}" /opt/ifaudit/grader; \
    fi

FROM ${BASE} AS runtime
ARG LOCK_SHA256
ARG VERSION
ARG REVISION
ARG SOURCE
ARG CREATED
ARG BASE_DIGEST
LABEL org.opencontainers.image.title="ifaudit" \
      org.opencontainers.image.description="Audit-grade replication of instruction-following scores" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.digest="${BASE_DIGEST}" \
      ifaudit.requirements.lock.sha256="${LOCK_SHA256}"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/ifaudit/venv/bin:$PATH \
    NLTK_DATA=/opt/ifaudit/nltk_data \
    IFAUDIT_PIN=/opt/ifaudit/pin.toml
COPY --from=build /opt/ifaudit /opt/ifaudit
RUN useradd --create-home --uid 1000 ifaudit && mkdir -p /work && chown ifaudit /work
WORKDIR /work

# Last: the canary, on the final filesystem. The dataset mirror is bind-mounted from the build
# context, so it is in no layer. An image that would grade differently is never made. This step
# writes bytecode for the modules grading imports, the commands most jobs run (start-up without
# bytecode is about 4x slower: `ifaudit --help` 4.5 s against 1.2 s on a loaded 2-core machine),
# then for numpy and Pillow, which the statistics and the report's plots import (grading does not),
# and for pyarrow and rocrate, which the importers (parquet, zstd) and the bundle import.
FROM runtime AS upstream
ARG GRADER_COMMIT
LABEL ifaudit.grader="upstream" ifaudit.grader.commit="${GRADER_COMMIT}"
# Runs take the grader from the verified copy (checked again before each use).
ENV IFAUDIT_GRADER=upstream IFAUDIT_GRADER_SOURCE=/opt/ifaudit/grader
RUN --mount=type=bind,source=containers/build-inputs,target=/tmp/build-inputs \
    set -eu; mirror=""; [ -d /tmp/build-inputs/data ] && mirror="--mirror /tmp/build-inputs/data"; \
    unset PYTHONDONTWRITEBYTECODE; \
    IFAUDIT_RESOURCES=/tmp/canary ifaudit selfcheck --task ifeval --config /opt/ifaudit/config.yaml ${mirror} \
        --offline --vendor-dir /tmp/canary/vendor --out /opt/ifaudit/canary.json; \
    rm -rf /tmp/canary; \
    python -c "import numpy, PIL.Image, PIL.ImageDraw, PIL.ImageFont, pyarrow.parquet, rocrate.rocrate"
USER ifaudit
CMD ["ifaudit", "--help"]

FROM runtime AS stand-in
LABEL ifaudit.grader="stand-in"
ENV IFAUDIT_GRADER=stand-in
RUN --mount=type=bind,source=containers/build-inputs,target=/tmp/build-inputs \
    set -eu; mirror=""; [ -d /tmp/build-inputs/data ] && mirror="--mirror /tmp/build-inputs/data"; \
    unset PYTHONDONTWRITEBYTECODE; \
    IFAUDIT_RESOURCES=/tmp/canary ifaudit selfcheck --task ifeval --config /opt/ifaudit/config.yaml ${mirror} \
        --out /opt/ifaudit/canary.json; \
    rm -rf /tmp/canary; \
    python -c "import numpy, PIL.Image, PIL.ImageDraw, PIL.ImageFont, pyarrow.parquet, rocrate.rocrate"
USER ifaudit
CMD ["ifaudit", "--help"]
