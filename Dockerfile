# The ifaudit image: a grading environment whose every byte was verified before it was made.
# Build it with containers/build.sh (it passes the labels below and, on a machine without
# network, the local copies of the grader, NLTK data and datasets); see docs/container.md.
#
# BASE: python:3.11-slim-bookworm, pinned by digest. The digest is the one public projects pin;
# no image registry was reachable where this file was written to re-check it. Any Debian
# bookworm image with python3, python3-venv and ca-certificates works, e.g. one made with
# debootstrap and `podman import` (docs/container.md).
ARG BASE=docker.io/library/python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91
FROM ${BASE}

# upstream: the pinned Google grader (needs GitHub, or a copy in build-inputs/grader);
# stand-in: the labelled registry copy (if-verifiable==0.1.2).
ARG GRADER=upstream
ARG LOCK_SHA256
ARG GRADER_COMMIT
LABEL org.opencontainers.image.title="ifaudit" \
      org.opencontainers.image.description="Audit-grade replication of instruction-following scores" \
      ifaudit.grader="${GRADER}" \
      ifaudit.grader.commit="${GRADER_COMMIT}" \
      ifaudit.requirements.lock.sha256="${LOCK_SHA256}"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PATH=/opt/ifaudit/venv/bin:$PATH \
    NLTK_DATA=/opt/ifaudit/nltk_data \
    IFAUDIT_PIN=/opt/ifaudit/pin.toml

# Optional inputs (containers/build-inputs/): extra-ca/*.crt for networks that need them, and,
# for offline builds, grader/ (the pinned files), nltk/ (an NLTK_DATA folder) and data/ (a
# dataset mirror laid out as config/config.yaml's `mirror:` paths).
COPY containers/build-inputs/ /tmp/build-inputs/
RUN if ls /tmp/build-inputs/extra-ca/*.crt >/dev/null 2>&1; then \
        cp /tmp/build-inputs/extra-ca/*.crt /usr/local/share/ca-certificates/ && update-ca-certificates; \
    fi

# The hash-locked environment; the label must name the lock that is installed.
COPY requirements.lock /opt/ifaudit/build/requirements.lock
RUN echo "${LOCK_SHA256}  /opt/ifaudit/build/requirements.lock" | sha256sum -c - \
 && python3 -m venv /opt/ifaudit/venv \
 && pip install --require-hashes -r /opt/ifaudit/build/requirements.lock
COPY pyproject.toml README.md /opt/ifaudit/build/
COPY src/ /opt/ifaudit/build/src/
COPY vendor/google_ifeval/pin.toml /opt/ifaudit/pin.toml
COPY config/config.yaml /opt/ifaudit/config.yaml
RUN pip install --no-deps /opt/ifaudit/build

# Materialize and verify the grader and the NLTK data; a build that cannot get verified bytes
# stops here. The verified grader files stay in the image as a local source for every run.
RUN set -eu; \
    grader_source=""; [ -d /tmp/build-inputs/grader ] && grader_source="--from /tmp/build-inputs/grader"; \
    nltk_mirror=""; [ -d /tmp/build-inputs/nltk ] && nltk_mirror="--nltk-mirror /tmp/build-inputs/nltk"; \
    IFAUDIT_RESOURCES=/opt/ifaudit/build/resources NLTK_DATA= \
        ifaudit vendor --grader "${GRADER}" ${grader_source} ${nltk_mirror} --record /opt/ifaudit/environment.json; \
    mv /opt/ifaudit/build/resources/nltk_data /opt/ifaudit/nltk_data; \
    if [ "${GRADER}" = upstream ]; then \
        mv "/opt/ifaudit/build/resources/vendor/google_ifeval/${GRADER_COMMIT}" /opt/ifaudit/grader; \
    fi

# Last: the canary. An image that would grade differently from the reference is never made.
RUN set -eu; \
    mirror=""; [ -d /tmp/build-inputs/data ] && mirror="--mirror /tmp/build-inputs/data"; \
    ifaudit selfcheck --task ifeval --config /opt/ifaudit/config.yaml ${mirror} --grader "${GRADER}" \
        --from /opt/ifaudit/grader --out /opt/ifaudit/canary.json; \
    rm -rf /tmp/build-inputs /opt/ifaudit/build; \
    useradd --create-home --uid 1000 ifaudit; \
    mkdir -p /work && chown ifaudit /work

# Runs inside the image take the grader from the verified copy (checked again before use).
ENV IFAUDIT_GRADER_SOURCE=/opt/ifaudit/grader \
    IFAUDIT_GRADER=${GRADER}
USER ifaudit
WORKDIR /work
CMD ["ifaudit", "--help"]
