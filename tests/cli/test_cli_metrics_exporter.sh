#!/usr/bin/env bash
# The metrics files with the real parts (Debian's prometheus and
# prometheus-node-exporter, which tools/install-deps.sh installs for CI):
# the demo's two runs (one broken on an old driver, one primed) write their
# files, promtool check metrics accepts each, and a node_exporter on
# 127.0.0.1 serves capguard's series, with the demo's figures, from its
# textfile collector.
. "$(dirname "$0")/lib.sh"
promtool=$(command -v promtool || true)
exporter=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -z "$promtool" ] || [ -z "$exporter" ]; then
  echo "SKIP: promtool or node_exporter not installed (Debian: prometheus, prometheus-node-exporter; tools/install-deps.sh installs them)"
  exit 77
fi
use_real_shim
m=$WORK/textfile
mkdir -p "$m"
engine=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
RANK=2 WORLD_SIZE=4 "$CAPGUARD" run --quiet --emulate-driver 12020 --metrics "$m" --log "$WORK/d.jsonl" \
  --prime "$WORK/p.cgp" -- "${engine[@]}" >/dev/null 2>&1
"$CAPGUARD" run --quiet --metrics "$m" --log "$WORK/d.jsonl" --prime "$WORK/p.cgp" -- "${engine[@]}" >/dev/null 2>&1
pids=($(process_field pid "$WORK/d.jsonl"))
[ ${#pids[@]} -eq 2 ] && pass || fail "wanted the demo's 2 processes in the log: ${pids[*]}"
# A program name the kernel cuts mid-character (comm keeps 15 bytes:
# 'vllm-推理服务' becomes 'vllm-推理服' and one byte of '务'), on a host whose
# name is Latin-1 (a UTS namespace of its own: root only): the labels are
# made valid UTF-8, and the file is served like the others.
cp "$DEMO_ENGINE" "$WORK/vllm-推理服务"
if [ "$(id -u)" = 0 ] && unshare -u true 2>/dev/null; then
  unshare -u sh -c 'printf "h\351te" >/proc/sys/kernel/hostname && exec "$@"' sh \
    env CAPGUARD_METRICS="$m" LD_PRELOAD="$REAL_SHIM" CAPGUARD_SUMMARY=0 "$WORK/vllm-推理服务" "$CUBIN" cg_test_fill \
    >/dev/null 2>&1
  host8='hète'
else
  echo "SKIP (part): a Latin-1 host name needs root and unshare -u (uid $(id -u)); the program name is still cut"
  CAPGUARD_METRICS="$m" LD_PRELOAD="$REAL_SHIM" CAPGUARD_SUMMARY=0 "$WORK/vllm-推理服务" "$CUBIN" cg_test_fill >/dev/null 2>&1
  host8=$(cat /proc/sys/kernel/hostname)
fi
n=0
for f in "$m"/capguard_*.prom; do
  n=$((n + 1))
  "$promtool" check metrics <"$f" >"$WORK/promtool.out" 2>&1 && pass \
    || fail "promtool check metrics rejects $(basename "$f"): $(cat "$WORK/promtool.out")"
done
[ "$n" -eq 3 ] && pass || fail "wanted 3 files, found $n"

# a free port on 127.0.0.1 (the kernel picks it), and the exporter on it,
# with only the textfile collector
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$exporter" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$m" >"$WORK/exporter.log" 2>&1 &
ex=$!
trap 'kill $ex 2>/dev/null; wait $ex 2>/dev/null; rm -rf "$WORK"' EXIT
python3 - "$port" "$WORK/scrape.txt" <<'PY' || fail "no /metrics from node_exporter: $(cat "$WORK/exporter.log")"
import sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/metrics"
for _ in range(100):   # 10 s at most
    try:
        open(sys.argv[2], "wb").write(urllib.request.urlopen(url, timeout=2).read())
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
kill $ex 2>/dev/null
wait $ex 2>/dev/null
s=$WORK/scrape.txt
# run 1 (rank 2 of 4): one capture, broken by the load the 12.2 driver refused
first=${pids[0]} second=${pids[1]}
drv=$(process_field driver_version "$WORK/d.jsonl" | head -1)   # the driver's own, not the one emulated
expect_in "$s" "capguard_captures_total{driver_version=\"$drv\",gpu_arch=\"sm_90\",host=\"$(cat /proc/sys/kernel/hostname)\",mode=\"guard\",pid=\"$first\",program=\"demo_engine\",rank=\"2\"} 1" "run 1's captures, every label"
grep -q "^capguard_captures_broken_total{.*pid=\"$first\".*} 1$" "$s" && pass || fail "run 1's broken capture not served"
grep -q "^capguard_refusals_total{call=\"cuModuleLoadData\",.*pid=\"$first\".*} 1$" "$s" && pass || fail "run 1's refused load not served"
grep -q "^capguard_loads_during_capture_total{.*pid=\"$first\".*verdict=\"refused\"} 1$" "$s" && pass || fail "run 1's refused load by verdict"
# run 2: primed, its capture made a graph; the load was served
grep -q "^capguard_captures_broken_total{.*pid=\"$second\".*} 0$" "$s" && pass || fail "run 2 broke"
grep -q "^capguard_loads_during_capture_total{.*pid=\"$second\".*verdict=\"served\"} 1$" "$s" && pass || fail "run 2's served load"
grep -q "^capguard_capture_seconds_total{.*pid=\"$second\".*} [0-9.e-]*$" "$s" && pass || fail "run 2's capture seconds"
grep -q "^capguard_first_replay_seconds{.*pid=\"$second\".*} " "$s" && pass || fail "run 2's first replay"
grep -q "^# TYPE capguard_capture_seconds_total counter$" "$s" && pass || fail "counter type"
# the cut program name and the Latin-1 host: U+FFFD for each byte that is no character
grep -q "^capguard_captures_total{.*host=\"${host8/è/�}\",.*program=\"vllm-推理服�\".*} 1$" "$s" && pass \
  || fail "the cut program name's series: $(grep '^capguard_captures_total' "$s")"
# the exporter read every file without an error
grep -q "^node_textfile_scrape_error 0$" "$s" && pass || fail "textfile collector error: $(grep textfile "$s")"
finish
