# halfspace: build the server and CLI on Debian 12, run them on a slim image.
#
#   docker build -t halfspace .
#   docker run -p 50051:50051 -v halfspace-data:/var/lib/halfspace halfspace

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make cmake pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libspdlog-dev prometheus-cpp-dev grpc-proto libnats-dev libboost-dev \
      libgtest-dev libgmock-dev libbenchmark-dev openssl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY proto proto
COPY core core
COPY server server
COPY client client
COPY tests tests
# The suite runs here, on the binaries the image ships: the unit tests, the
# in-process server tests and the process tests (the CLI, SIGTERM and
# SIGKILL, restarts). Those that need software the image does not carry
# (scikit-learn, Python, Node, nginx, buf) run in tests/run.sh.
# --build-arg TESTS=off skips it (a quicker build of code tested elsewhere).
ARG TESTS=on
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DHALFSPACE_BUILD_TESTS=$([ "$TESTS" = off ] && echo OFF || echo ON) \
      -DHALFSPACE_PYTHON_CLIENT=OFF \
 && cmake --build build -j"$(nproc)" \
 && if [ "$TESTS" != off ]; then \
      ctest --test-dir build -j"$(nproc)" --timeout 300 --output-on-failure \
        -L "unit|grpc|process" \
        -E "Sharding|Replication|PythonClient|NodeExample|ReadmeSessions|InstalledClient"; \
    fi

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgrpc++1.51 libprotobuf32 \
      libabsl20220623 libspdlog1.10 libprometheus-cpp-pull1.0 libnats3.4 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/halfspace halfspace \
 && mkdir -p /var/lib/halfspace && chown halfspace /var/lib/halfspace
COPY --from=build /src/build/halfspace-server /src/build/halfspace /usr/local/bin/
USER halfspace
VOLUME /var/lib/halfspace
# 8080: JSON over HTTP, when started with --http_listen=0.0.0.0:8080.
EXPOSE 50051 9464 8080
# SERVING once the models are loaded; the CLI exits 1 otherwise.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s \
  CMD ["halfspace", "--server=127.0.0.1:50051", "health"]
ENTRYPOINT ["halfspace-server", "--listen=0.0.0.0:50051", "--data_dir=/var/lib/halfspace", "--metrics_listen=0.0.0.0:9464"]
