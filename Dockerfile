# syntax=docker/dockerfile:1
# The responses-gateway image: docs/deployment.md.
#
#   docker build -t responses-gateway .
#   docker build --build-arg FEATURES=minilm -t responses-gateway:minilm .
#
# FEATURES: cargo features of the gateway, space-separated (default none). `minilm` adds the
# local MiniLM embedder; its model files are not in the image (mount them, docs/deployment.md);
# `otel` adds OpenTelemetry traces (OTLP/HTTP, docs/configuration.md "Traces and logs").

ARG RUST_VERSION=1.95.0
ARG DEBIAN_RELEASE=trixie

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS builder
ARG FEATURES=""
WORKDIR /src
# Every workspace member's manifest and sources (cargo loads the whole workspace); not the
# tests, scripts or docs.
COPY Cargo.toml Cargo.lock ./
COPY crates ./crates
COPY bench/loadgen ./bench/loadgen
# BuildKit caches (kept between builds, not in the image): the crates.io downloads and the
# target directory, so a rebuild after a source change recompiles only the workspace crates.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p responses-gateway ${FEATURES:+--features "$FEATURES"} \
    && cp target/release/responses-gateway /usr/local/bin/responses-gateway

FROM debian:${DEBIAN_RELEASE}-slim
# CA certificates for HTTPS upstreams and tool backends; a non-root user owning the data
# directory (the SQLite store and the embedded vector store). ca-certificates is not pinned
# on purpose: a rebuild should get the current roots.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 gateway \
    && useradd --system --uid 10001 --gid gateway --home-dir /var/lib/responses-gateway \
        --no-create-home --shell /usr/sbin/nologin gateway \
    && install -d -o gateway -g gateway -m 0750 /var/lib/responses-gateway
COPY --from=builder /usr/local/bin/responses-gateway /usr/local/bin/responses-gateway

# Listen on every interface of the container (the default is loopback only); data under
# /var/lib/responses-gateway. Any other setting: RESPONSES_GATEWAY_<TABLE>__<KEY>.
ENV RESPONSES_GATEWAY_SERVER__LISTEN=0.0.0.0:8080 \
    RESPONSES_GATEWAY_SERVER__DATA_DIR=/var/lib/responses-gateway
USER 10001:10001
WORKDIR /var/lib/responses-gateway
EXPOSE 8080
# GET /healthz with bash's /dev/tcp (the slim image has no curl), on the port of
# RESPONSES_GATEWAY_SERVER__LISTEN.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${RESPONSES_GATEWAY_SERVER__LISTEN##*:} && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["responses-gateway"]
CMD ["serve"]
