# syntax=docker/dockerfile:1
# gpufleetd: multi-stage build on Debian 12 (bookworm).
#   docker build -t gpufleet/gpufleetd:local .
#   docker build --build-arg GIT_REV=$(git rev-parse --short=12 HEAD) ...

# ---- build stage -----------------------------------------------------------
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config xxd \
        libmicrohttpd-dev libpq-dev libjansson-dev libssh2-1-dev libjwt-dev libssl-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .git is not in the build context (.dockerignore), so pass the revision in.
ARG GIT_REV=unknown
RUN make clean && make -j"$(nproc)" GIT_REV="$GIT_REV" bin/gpufleetd \
 && strip --strip-unneeded bin/gpufleetd

# ---- runtime stage ---------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmicrohttpd12 libpq5 libjansson4 libssh2-1 libjwt0 libssl3 libcurl4 \
        ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin gpufleet
COPY --from=build /src/bin/gpufleetd /usr/local/bin/gpufleetd
USER gpufleet:gpufleet
ENV GPUFLEET_LISTEN=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["gpufleetd"]
CMD ["serve", "--migrate"]
