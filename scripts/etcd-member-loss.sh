#!/bin/bash
# Measures what losing one etcd member of three costs a fleet (issue 29 item 6, decision 0034):
# starts a 3-member etcd cluster on loopback, runs `splitfleet demo --etcd` on it, SIGKILLs the
# member that leads the etcd cluster KILL_AT seconds in (never restarted), and prints the demo's
# summary (leaderChanges, duplicates = replayed units, durationMs) and the fleet's session losses.
#
#   npm run build && scripts/etcd-member-loss.sh [runs] [kill-at-seconds]
#   NO_KILL=1 scripts/etcd-member-loss.sh     # the same without the kill (the baseline)
#
# Needs etcd and etcdctl on PATH. Every run uses fresh data dirs and ports.
set -u
runs=${1:-1}
kill_at=${2:-9}
here=$(cd "$(dirname "$0")/.." && pwd)
cli="$here/dist/src/cli/main.js"
[ -f "$cli" ] || { echo "build first: npm run build" >&2; exit 2; }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

for run in $(seq 1 "$runs"); do
  dir=$(mktemp -d /tmp/splitfleet-member-loss-XXXXXX)
  names=(m0 m1 m2); clients=(); peers=(); pids=()
  for i in 0 1 2; do clients+=("http://127.0.0.1:$(port)"); peers+=("http://127.0.0.1:$(port)"); done
  initial="m0=${peers[0]},m1=${peers[1]},m2=${peers[2]}"
  for i in 0 1 2; do
    etcd --name "${names[$i]}" --data-dir "$dir/${names[$i]}" \
      --listen-client-urls "${clients[$i]}" --advertise-client-urls "${clients[$i]}" \
      --listen-peer-urls "${peers[$i]}" --initial-advertise-peer-urls "${peers[$i]}" \
      --initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token "loss-$$-$run" \
      --logger zap --log-level error 2>"$dir/${names[$i]}.log" &
    pids+=($!)
    disown $!
  done
  endpoints=$(IFS=,; echo "${clients[*]}")
  for _ in $(seq 1 100); do
    etcdctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1 && break
    sleep 0.2
  done
  (
    [ -n "${NO_KILL:-}" ] && exit 0
    sleep "$kill_at"
    for i in 0 1 2; do
      if etcdctl --endpoints "${clients[$i]}" endpoint status -w json 2>/dev/null \
        | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["Status"]; sys.exit(0 if s["leader"]==s["header"]["member_id"] else 1)'; then
        kill -KILL "${pids[$i]}"
        echo "run $run: SIGKILLed etcd member m$i (the etcd leader) at ${kill_at} s" >&2
      fi
    done
  ) &
  killer=$!
  node "$cli" demo --etcd "$endpoints" --workers 4 --splits 160 --plain --json \
    >"$dir/demo.out" 2>"$dir/demo.err"
  wait "$killer"
  summary=$(tail -n 1 "$dir/demo.out")
  losses=$(grep -c 'lost its session' "$dir/demo.out")
  grep -o '[^ ]* lost its session ([^)]*)' "$dir/demo.out" | sed "s/^/run $run:   /" >&2
  echo "$summary" | python3 -c "
import json,sys
s=json.load(sys.stdin)
print('run $run: verdict=%s lost=%d leaderChanges=%d duplicates=%d (%.1f %%) durationMs=%d sessionLosses=$losses' % (
  s['verdict'], s['lost'], s['leaderChanges'], s['duplicates'], 100.0*s['duplicates']/max(1,s['units']), s['durationMs']))"
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait
  rm -rf "$dir"
done
