# halfspace: build the server and CLI on Debian 12, run them on a slim image.
#
#   docker build -t halfspace .
#   docker run -p 50051:50051 -v halfspace-data:/var/lib/halfspace halfspace

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make cmake pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libspdlog-dev prometheus-cpp-dev grpc-proto \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY proto proto
COPY core core
COPY server server
COPY client client
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHALFSPACE_BUILD_TESTS=OFF \
      -DHALFSPACE_PYTHON_CLIENT=OFF \
 && cmake --build build -j"$(nproc)" --target halfspace_server_main halfspace_cli

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgrpc++1.51 libprotobuf32 \
      libabsl20220623 libspdlog1.10 libprometheus-cpp-pull1.0 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/halfspace halfspace \
 && mkdir -p /var/lib/halfspace && chown halfspace /var/lib/halfspace
COPY --from=build /src/build/halfspace-server /src/build/halfspace /usr/local/bin/
USER halfspace
VOLUME /var/lib/halfspace
EXPOSE 50051 9464
# SERVING once the models are loaded; the CLI exits 1 otherwise.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s \
  CMD ["halfspace", "--server=127.0.0.1:50051", "health"]
ENTRYPOINT ["halfspace-server", "--listen=0.0.0.0:50051", "--data_dir=/var/lib/halfspace", "--metrics_listen=0.0.0.0:9464"]
