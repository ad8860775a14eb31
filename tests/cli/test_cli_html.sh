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
finish
