#!/usr/bin/env bash
# Starts a loopback `chroma run` server for the tests (chromadb must be installed) and prints its
# URL. Idempotent: reuses a server already answering on the port.
set -euo pipefail
port=${MNEMON_CHROMA_PORT:-58123}
url="http://127.0.0.1:$port"
if curl -fsS "$url/api/v2/heartbeat" >/dev/null 2>&1; then echo "$url"; exit 0; fi
data=/var/tmp/mnemon-chroma
mkdir -p "$data"
nohup chroma run --path "$data" --host 127.0.0.1 --port "$port" >"$data/server.log" 2>&1 &
for _ in $(seq 1 60); do
  curl -fsS "$url/api/v2/heartbeat" >/dev/null 2>&1 && { echo "$url"; exit 0; }
  sleep 1
done
echo "chroma server did not start; see $data/server.log" >&2
exit 1
