# The arbor image: the release binary on a small Debian runtime, run as a
# non-root user. The Kubernetes manifests (deploy/k8s/) reference it by the
# name you give it:
#
#   podman build -t registry.example.com/arbor:latest .   (or docker build)
#   podman push registry.example.com/arbor:latest
#
# RUST_VERSION pins the builder's toolchain; Cargo.lock's dependencies
# need Rust 1.88 or newer.

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

# --- build: the release binary, from the locked dependency graph ---------
FROM docker.io/library/rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p arbor-cli --bin arbor \
    && install -D -m 0755 target/release/arbor /out/arbor

# --- runtime: the binary, CA roots for https:// endpoints, a plain user --
FROM docker.io/library/debian:${DEBIAN_RELEASE}-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 arbor \
    && useradd --uid 10001 --gid arbor --create-home --shell /usr/sbin/nologin arbor \
    && install -d -o arbor -g arbor /results
COPY --from=build /out/arbor /usr/local/bin/arbor
USER 10001:10001
WORKDIR /results
# 7700: the start barrier (--barrier-listen), reached by the other shards.
EXPOSE 7700
ENTRYPOINT ["arbor"]
CMD ["--help"]
