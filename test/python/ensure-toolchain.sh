#!/usr/bin/env bash
# test/python-client.test.ts drives the cluster from Python: Debian's grpcio
# and protobuf for /usr/bin/python3, Debian's protoc 3.21 with its gRPC
# Python plugin for the stubs, and the well-known .proto files (only a
# Recommends of protobuf-compiler, so named). Installs them when missing;
# `npm test` runs this first (pretest), and so does .ci/run.
set -euo pipefail
if /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null &&
  [ -x /usr/bin/protoc ] && [ -x /usr/bin/grpc_python_plugin ] &&
  [ -f /usr/include/google/protobuf/struct.proto ]; then
  exit 0
fi
exec bash "$(dirname "$0")/../support/apt-install.sh" "the Python client test" python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
