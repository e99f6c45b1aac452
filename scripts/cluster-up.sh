#!/usr/bin/env bash
# A local 3-node svc cluster on loopback: 3 nats-server processes (one JetStream cluster) and 3
# `svc serve --cluster` nodes, all under one temp dir. Prints the URLs and an admin key; Ctrl-C
# stops everything and removes the temp dir (KEEP=1 keeps it). Needs `npm run build` and
# Debian's nats-server (apt-get install -y nats-server; or set SVC_NATS_SERVER).
# Ports: NATS clients 14222-14224, NATS routes 16222-16224, svc 8081-8083 (BASE_PORT=8081 to move).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MAIN="$ROOT/dist/cli/main.js"
NATS="${SVC_NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}"
BASE_PORT="${BASE_PORT:-8081}"
[ -x "$NATS" ] || { echo "nats-server not found: apt-get install -y nats-server (or set SVC_NATS_SERVER)" >&2; exit 1; }
[ -f "$MAIN" ] || { echo "$MAIN missing: run npm run build first" >&2; exit 1; }

DIR="$(mktemp -d "${TMPDIR:-/tmp}/svc-cluster-XXXXXX")"
PIDS=()
stop() {
  trap - INT TERM EXIT
  echo; echo "stopping..."
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $DIR"; else rm -rf "$DIR"; fi
}
trap stop INT TERM EXIT

NATS_URLS=""
for i in 0 1 2; do
  routes=""
  for j in 0 1 2; do [ "$j" = "$i" ] || routes="$routes${routes:+, }nats-route://127.0.0.1:$((16222 + j))"; done
  cat > "$DIR/nats-$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:$((14222 + i))
jetstream { store_dir: "$DIR/nats-$i", max_memory_store: 64MB, max_file_store: 1GB }
cluster { name: svc-local, listen: 127.0.0.1:$((16222 + i)), routes: [$routes] }
EOF
  "$NATS" -c "$DIR/nats-$i.conf" > "$DIR/nats-$i.log" 2>&1 &
  PIDS+=($!)
  NATS_URLS="$NATS_URLS${NATS_URLS:+,}nats://127.0.0.1:$((14222 + i))"
done

# One admin key, issued into node a's data dir before its first start; node a imports it into the
# shared keys bucket (svc_keys), so it works on every node.
mkdir -p "$DIR/a" "$DIR/b" "$DIR/c"
KEY="$(node "$MAIN" keys create --admin --json --name "cluster-up admin" --data "$DIR/a" | tail -n 1 | sed -E 's/.*"key":"([^"]+)".*/\1/')"

i=0
for n in a b c; do
  port=$((BASE_PORT + i))
  node "$MAIN" serve --port "$port" --data "$DIR/$n" --cluster "$NATS_URLS" --node-id "$n" > "$DIR/svc-$n.log" 2>&1 &
  PIDS+=($!)
  # one at a time: node a first (it imports the admin key and becomes the first leader of the home stores)
  for _ in $(seq 1 150); do
    curl -sf "http://127.0.0.1:$port/v1/ready" > /dev/null 2>&1 && break
    sleep 0.2
  done
  curl -sf "http://127.0.0.1:$port/v1/ready" > /dev/null || { echo "node $n did not start; see $DIR/svc-$n.log:" >&2; tail -n 20 "$DIR/svc-$n.log" >&2; exit 1; }
  i=$((i + 1))
done

cat <<EOF
svc cluster up (data and logs in $DIR)
  NATS       $NATS_URLS
  node a     http://127.0.0.1:$BASE_PORT   (first leader of the home stores)
  node b     http://127.0.0.1:$((BASE_PORT + 1))
  node c     http://127.0.0.1:$((BASE_PORT + 2))
  admin key  $KEY
try:  curl -s http://127.0.0.1:$((BASE_PORT + 2))/v1/health
Ctrl-C stops everything.
EOF
wait
