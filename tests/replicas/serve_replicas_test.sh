#!/usr/bin/env bash
# Two CPU replicas of the tiny model behind a real nginx (scripts/serve_replicas), benched with
# --session-id-header: every agent session's requests reach one replica, the sessions use both,
# every request is logged once with its own correlation id, and each session reached the replica
# that `paceline sim --router session` predicts (its copy of nginx's consistent hash ring). The
# same bench behind round robin splits sessions across the replicas, so the check can tell the
# two apart.
#   serve_replicas_test.sh PACELINE_BINARY
# Exit 77 (skipped) when nginx is not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
paceline=${1:?usage: serve_replicas_test.sh PACELINE_BINARY}
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "SKIPPED: nginx is not installed (scripts/setup installs it)"
  exit 77
fi
tmp=$(mktemp -d -t paceline-replicas-test.XXXXXX)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# Starts the replicas behind `router` on `port`, benches them, stops them; leaves the access log.
run() {  # router port out
  local router=$1 port=$2 out=$3
  PACELINE=$paceline "$root/scripts/serve_replicas" --router "$router" --port "$port" \
    --log-dir "$out" 2 --model tiny --threads 1 >"$out.serve.log" 2>&1 &
  server=$!
  for _ in $(seq 1 900); do
    [ -f "$out/ready" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$out.serve.log"; echo "FAIL: serve_replicas exited"; exit 1; }
    sleep 0.1
  done
  [ -f "$out/ready" ] || { cat "$out.serve.log"; echo "FAIL: replicas not ready in 90 s"; exit 1; }
  "$paceline" bench --url "http://127.0.0.1:$port" --session-id-header \
    --traces "$root/../shared/traces/agentx" --concurrency 16 --duration 8 \
    --isl-scale 0.002 --osl-scale 0.02 --warmup-requests-per-lane 1 --drain-timeout 30 \
    --no-metrics --out "$out/run" >"$out.bench.log" 2>&1 ||
    { cat "$out.bench.log"; echo "FAIL: bench through nginx failed"; exit 1; }
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=""
  failed=$(jq '.requests_failed' "$out/run/summary.json")
  [ "$failed" = 0 ] || { echo "FAIL: $router: $failed requests failed"; exit 1; }
}

# "sessions replicas split": sessions seen, replicas used, sessions that reached two replicas.
affinity() {  # access log
  grep -o 'session=[^ ]* upstream=[^ ]*' "$1" | grep -v 'session= ' | grep -v 'session=-' |
    awk '{ s[$1] = s[$1] == "" || s[$1] == $2 ? $2 : "split"; u[$2] = 1 }
         END { n = 0; k = 0; split_ = 0
               for (x in s) { n++; if (s[x] == "split") split_++ }
               for (y in u) k++
               print n, k, split_ }'
}

base=$((20000 + ($$ % 20000)))
run session "$base" "$tmp/session"
read -r sessions used split < <(affinity "$tmp/session/access.log")
echo "session affinity: $sessions sessions on $used replicas, $split split"
[ "$sessions" -ge 12 ] || { echo "FAIL: only $sessions sessions reached nginx"; exit 1; }
[ "$used" = 2 ] || { echo "FAIL: the sessions used $used replica(s), not both"; exit 1; }
[ "$split" = 0 ] || { echo "FAIL: $split sessions reached both replicas"; exit 1; }
with_id=$(grep -o 'correlation=[^ ]*' "$tmp/session/access.log" | grep -vc 'correlation=-$' || true)
ids=$(grep -o 'correlation=[^ ]*' "$tmp/session/access.log" | grep -v 'correlation=-$' | sort -u | wc -l)
requests=$(wc -l <"$tmp/session/run/records.jsonl")
# Each of the bench's requests (warmup included) once, each with its own id.
[ "$with_id" = "$requests" ] || { echo "FAIL: $with_id logged requests for $requests records"; exit 1; }
[ "$ids" = "$requests" ] || { echo "FAIL: $ids correlation ids for $requests requests"; exit 1; }

# Where nginx put each session, against where the simulator's ring puts it.
grep -o 'session=[^ ]* upstream=[^ ]*' "$tmp/session/access.log" | grep -v 'session= ' |
  grep -v 'session=-' | sed 's/^session=//; s/ upstream=/ /' | sort -u >"$tmp/nginx-routes"
cut -d' ' -f1 "$tmp/nginx-routes" >"$tmp/sessions"
"$paceline" sim --replicas 2 --router session \
  --replica-servers "127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))" \
  --show-routes "$tmp/sessions" | sort -u >"$tmp/sim-routes" ||
  { echo "FAIL: paceline sim --show-routes failed"; exit 1; }
if ! diff "$tmp/nginx-routes" "$tmp/sim-routes" >"$tmp/routes.diff"; then
  cat "$tmp/routes.diff"
  echo "FAIL: the simulator's ring put sessions elsewhere than nginx did"
  exit 1
fi
echo "the simulator's ring: all $(wc -l <"$tmp/sessions") sessions where nginx put them"

run round-robin "$((base + 10))" "$tmp/rr"
read -r sessions used split < <(affinity "$tmp/rr/access.log")
echo "round robin: $sessions sessions on $used replicas, $split split"
[ "$split" -gt 0 ] || { echo "FAIL: round robin kept every session on one replica"; exit 1; }
echo "PASS"
