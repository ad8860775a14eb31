#!/usr/bin/env bash
# capguard report --html: one self-contained page (no external resources),
# with a timeline of captures per process and the events inside them.
. "$(dirname "$0")/lib.sh"
h=$WORK/r.html
run_cg html report --all --html "$h" "$DATA/run1.jsonl" "$DATA/run2.jsonl"
expect_rc 1 "--html keeps the exit code of the findings"
[ -s "$h" ] && pass || fail "--html wrote nothing"
expect_in "$h" "<!DOCTYPE html>" "doctype"
expect_in "$h" "<svg" "inline SVG timeline"
expect_in "$h" "<style>" "inline CSS"
# nothing fetched: no URLs, no external scripts, stylesheets or images
if grep -qiE 'https?://|<script|<link|<img|<iframe|url\(|@import' "$h"; then
  fail "page refers to something outside itself: $(grep -oiE 'https?://[^"]*|<script|<link|<img|<iframe|url\(|@import' "$h" | head -3)"
else pass; fi
# what ran, at the top: each run's command line and driver
expect_in "$h" "<td>1 (pid 4100)</td><td><code>python3 -m vllm.entrypoints.openai.api_server --model m</code></td><td>CUDA 12.2</td>" "run 1 at the top"
expect_in "$h" "<td>2 (pid 5200)</td><td><code>python3 bench.py</code></td><td>CUDA 12.8</td><td>sm_90</td>" "run 2 at the top, with the GPU architecture"
# runs on their own axes
[ "$(grep -c '<svg viewBox=' "$h")" -eq 2 ] && pass || fail "wanted one scalable timeline per run"
expect_in "$h" "<h3>run 1: pid 4100 " "run 1's timeline"
expect_in "$h" "<h3>run 2: pid 5200 " "run 2's timeline"
# a table of processes and drivers
expect_in "$h" "<h2>Processes</h2>" "process table"
expect_in "$h" "<td>pid 4102 (run1.jsonl)</td><td class=\"n\">4100</td>" "process with its parent"
# why, for each broken capture, as in the text report
expect_in "$h" "<td>the driver (CUDA 12.2) refused it: drivers before 12.3 refuse module loads during capture</td>" "why of a broken capture"
expect_in "$h" "the log does not say which call broke it (an older capguard wrote it)" "a capture of an older log broken without a logged call: no offender claimed"
# details in the page, not only in tooltips
expect_in "$h" "<h2>Calls during capture</h2>" "calls table"
[ "$(grep -c '<td>pid [0-9]* (run[12].jsonl)</td><td>[0-9]*</td><td>cu' "$h")" -eq 6 ] && pass || fail "wanted 6 rows of calls"
# one word for a capture that did not survive
n=$(grep '<rect ' "$h" | grep -c 'capture [0-9]*, broken')
[ "$n" -eq 4 ] && pass || fail "$n capture boxes say broken, wanted 4"
if grep '<rect ' "$h" | grep -q 'failed\|invalid'; then fail "capture boxes say failed or invalid"; else pass; fi
# --all: each run's advice under its run
sed -n '/<h2 id="what-to-do">What to do<\/h2>/,/<h2>Timeline<\/h2>/p' "$h" >"$WORK/html-advice"
expect_in "$WORK/html-advice" "<h3>run 1: pid 4100 " "HTML --all: run 1's advice headed"
expect_in "$WORK/html-advice" "<h3>run 2: pid 5200 " "HTML --all: run 2's advice headed"
sed -n '/<h3>run 2: pid 5200 /,$p' "$WORK/html-advice" >"$WORK/html-advice2"
expect_not_in "$WORK/html-advice2" "warm th" "HTML --all: run 1's warm-up not under run 2"
# the verdict and what to do come before the timeline and the tables
python3 - "$h" <<'PY' >"$WORK/order" 2>&1 && pass || fail "the page's order: $(cat "$WORK/order")"
import sys
page = open(sys.argv[1], encoding="utf-8").read()
todo, timeline = page.find('<h2 id="what-to-do">What to do</h2>'), page.find("<h2>Timeline</h2>")
assert 0 < page.find('class="sum"') < todo < timeline, (todo, timeline)
PY
# the legend keys only the verdicts the page's calls have
legend=$(grep -o '<p class="legend">.*</p>' "$h")
for v in $(grep -o '"verdict":"[a-z-]*"' "$DATA/run1.jsonl" "$DATA/run2.jsonl" | sed 's/.*:"//; s/"//' | sort -u); do
  grep -qF "call $v<" <<<"$legend" && pass || fail "the legend lacks call $v, which the page has"
done
for v in rescued deferred; do
  if grep -q "\"verdict\":\"$v\"" "$DATA/run1.jsonl" "$DATA/run2.jsonl"; then continue; fi
  grep -qF "call $v<" <<<"$legend" && fail "the legend keys call $v, which no call has" || pass
done
# the axis's labels at round values: whole numbers, 1, 2 or 5 times a power of ten apart
python3 - "$h" <<'PY' >"$WORK/ticks" 2>&1 && pass || fail "axis labels not at round values: $(cat "$WORK/ticks")"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
for svg in re.findall(r"<svg.*?</svg>", page, re.S):
    labels = re.findall(r'text-anchor="(?:start|middle|end)">([^<]*)</text>', svg)
    assert len(labels) >= 2, labels
    values = []
    for l in labels:
        m = re.fullmatch(r"(\d+) (\u00b5s|ms|s)", l)
        assert m, f"label {l!r} is not a whole number of one unit"
        values.append(int(m.group(1)))
    steps = {b - a for a, b in zip(values, values[1:])}
    assert values[0] == 0 and len(steps) == 1, values
    step = steps.pop()
    while step % 10 == 0: step //= 10
    assert step in (1, 2, 5), values
PY
# one row per process, one box per capture, one marker per event
for p in 4100 4101 4102 5200; do expect_in "$h" "pid $p (" "timeline row for pid $p"; done
n=$(grep -c '<rect ' "$h"); [ "$n" -eq 6 ] && pass || fail "$n capture boxes, wanted 6"
n=$(grep -c '<path d=' "$h"); [ "$n" -eq 6 ] && pass || fail "$n event markers, wanted 6"
expect_in "$h" "cuModuleLoadData (module-load, refused) at fla/ops/gated_delta_rule/chunk.py:210 in chunk_gated_delta_rule_fwd; kernels: _gdn_fwd_kernel, _gdn_chunk_kernel" "event tooltip"
expect_in "$h" "Broken captures" "findings table"
# well-formed: every element opened is closed (HTML parser of the Python standard library)
python3 - "$h" <<'PY' >"$WORK/parse" 2>&1 && pass || fail "HTML structure: $(cat "$WORK/parse")"
import sys
from html.parser import HTMLParser
void = {"meta", "br", "rect", "line", "path", "img", "link"}
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []
    def handle_starttag(self, tag, attrs):
        if tag not in void: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs): pass
    def handle_endtag(self, tag):
        if tag in void: return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()
p = P(); p.feed(open(sys.argv[1]).read()); p.close()
assert not p.stack, f"unclosed: {p.stack}"
PY
# text that looks like markup is escaped
cat >"$WORK/evil.jsonl" <<'J'
{"v":1,"type":"event","pid":7,"time_ns":5,"event":"module-load","call":"cuModuleLoadData","verdict":"refused","capture":{"id":1,"began":"<script>x</script>"},"image":{"kernels":["k<b>&amp;"]},"python_stack":[{"file":"a\"b.py","line":1,"func":"<f>"}]}
J
run_cg evil report --html "$WORK/evil.html" "$WORK/evil.jsonl"
if grep -q '<script>\|<b>\|<f>' "$WORK/evil.html"; then fail "log text reached the page unescaped"; else pass; fi
expect_in "$WORK/evil.html" "k&lt;b&gt;&amp;amp;" "kernel name escaped"

# --- extreme time fields: no undefined behaviour (UBSan build), a page and a trace all the same
cat >"$WORK/extreme.jsonl" <<'J'
{"v":1,"type":"process","pid":1,"ppid":0,"time_ns":-9223372036854775808,"argv":["x"],"mode":"guard","driver_version":12020,"emulate_driver":0,"version":"0"}
{"v":1,"type":"event","pid":1,"time_ns":9223372036854775807,"event":"module-load","call":"cuModuleLoadData","verdict":"refused","result":900,"capture":{"id":1,"began":"x"},"image":{"kernels":["k"]}}
{"v":1,"type":"capture","pid":1,"time_ns":9223372036854775807,"id":1,"status":"failed","begin_ns":-9223372036854775808,"end_ns":9223372036854775807,"events":1}
{"v":1,"type":"capture","pid":1,"time_ns":1,"id":2,"status":"ended","begin_ns":9223372036854775807,"end_ns":-5,"events":0}
{"v":1,"type":"process","pid":2,"ppid":1,"time_ns":9223372036854775807,"argv":["y"],"mode":"guard","driver_version":-2147483648,"emulate_driver":9223372036854775807,"version":"0"}
{"v":1,"type":"capture","pid":2,"time_ns":0,"id":-9223372036854775808,"status":"active","begin_ns":0,"end_ns":0,"events":-1}
J
if [ -n "${CAPGUARD_UBSAN:-}" ] && [ -x "$CAPGUARD_UBSAN" ]; then
  for args in "--all --html $WORK/x.html --trace $WORK/x.json" "--json" "" "--all"; do
    # shellcheck disable=SC2086
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$CAPGUARD_UBSAN" report $args "$WORK/extreme.jsonl" \
      >"$WORK/ub.out" 2>"$WORK/ub.err"; rc=$?
    if grep -q "runtime error" "$WORK/ub.err" || [ "$rc" -gt 2 ]; then
      fail "UBSan: report $args: exit $rc: $(grep -m3 'runtime error' "$WORK/ub.err")"
    else pass; fi
  done
  grep -q '<svg viewBox' "$WORK/x.html" && pass || fail "no timeline for extreme times"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/x.json" && pass || fail "trace of extreme times is not JSON"
else
  echo "note: no UBSan build of capguard (compiler without -fsanitize=undefined): extreme times checked without it"
  run_cg extreme report --all --html "$WORK/x.html" "$WORK/extreme.jsonl"
  [ "$rc" -le 2 ] && pass || fail "report of extreme times: exit $rc"
fi
finish
