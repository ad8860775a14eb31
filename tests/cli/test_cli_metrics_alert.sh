#!/usr/bin/env bash
# docs/fleet.md's questions, asked of a real Prometheus server (Debian's
# prometheus) scraping a real node_exporter (prometheus-node-exporter) on
# 127.0.0.1 once a second, after an engine that broke and died: the
# process's series are there from its start with their zero values (written
# at its first load), so increase() sees the broken capture, and the doc's
# alert returns the host. Each query is taken from the doc as written.
. "$(dirname "$0")/lib.sh"
prom=$(command -v prometheus || true)
exporter=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -z "$prom" ] || [ -z "$exporter" ]; then
  echo "SKIP: prometheus or node_exporter not installed (Debian: prometheus, prometheus-node-exporter; tools/install-deps.sh installs them)"
  exit 77
fi
use_real_shim
m=$WORK/textfile
mkdir -p "$m"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ep=$(free_port)
"$exporter" --web.listen-address="127.0.0.1:$ep" --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$m" >"$WORK/exporter.log" 2>&1 &
ex=$!
pp=$(free_port)
cat >"$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$ep']
YML
"$prom" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$pp" >"$WORK/prometheus.log" 2>&1 &
pr=$!
trap 'kill $ex $pr 2>/dev/null; wait $ex $pr 2>/dev/null; rm -rf "$WORK"' EXIT

# query EXPR: the server's answer to an instant query, as JSON on stdout
query() {
  python3 - "$pp" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?" % sys.argv[1] + urllib.parse.urlencode({"query": sys.argv[2]})
print(json.dumps(json.load(urllib.request.urlopen(url, timeout=5))))
PY
}
# wait_for EXPR SECONDS: until the query returns a series
wait_for() {
  local i
  for ((i = 0; i < $2 * 4; i++)); do
    query "$1" 2>/dev/null | grep -q '"result": \[{' && return 0
    sleep 0.25
  done
  return 1
}
wait_for 'up{job="node"} == 1' 30 && pass || { fail "Prometheus never scraped node_exporter"; cat "$WORK/prometheus.log" >&2; finish; }

# the engine: its first load, 4 s of work (scraped meanwhile), then a capture
# broken by the load a 12.2 driver refuses, and it dies
"$CAPGUARD" run --quiet --emulate-driver 12020 --metrics "$m" --log "$WORK/run.jsonl" --prime "$WORK/p.cgp" -- \
  "$METRICS_PROBE" late-break 4 "$CUBIN" >"$WORK/run.out" 2>"$WORK/run.err"
rc=$?
expect_rc 1 "the engine's capture broke"
pid=$(process_field pid "$WORK/run.jsonl")
host=$(cat /proc/sys/kernel/hostname)
wait_for "capguard_captures_broken_total{pid=\"$pid\"} == 1" 20 && pass || fail "the broken count never reached Prometheus"

# the doc's own queries, as written
alert=$(grep -m1 'increase(capguard_captures_broken_total' "$SOURCE_ROOT/docs/fleet.md" | sed 's/^ *//')
seconds=$(grep -m1 '(capguard_capture_seconds_total)' "$SOURCE_ROOT/docs/fleet.md" | sed 's/^ *//')
[ -n "$alert" ] && pass || fail "docs/fleet.md has no alert query"
echo "$alert" >"$WORK/alert.query"
expect_in "$WORK/alert.query" "increase(capguard_captures_broken_total" "the alert the doc gives"
query "$alert" >"$WORK/alert.json"
expect_in "$WORK/alert.json" "\"host\": \"$host\"" "the doc's alert returns the host"
query "sum by (host) (rate(capguard_captures_broken_total[1m])) > 0" >"$WORK/rate.json"
expect_in "$WORK/rate.json" "\"host\": \"$host\"" "rate() sees the break too"
query "$seconds" >"$WORK/seconds.json"
expect_in "$WORK/seconds.json" "\"host\": \"$host\"" "the doc's capture-seconds query returns the host"
# the zero was scraped before the one: one series, from the process's start
query "min_over_time(capguard_captures_broken_total{pid=\"$pid\"}[1h])" >"$WORK/zeros.json"
expect_in "$WORK/zeros.json" '"0"]' "a zero sample before the break"
finish
