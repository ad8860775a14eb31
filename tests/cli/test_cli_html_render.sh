#!/usr/bin/env bash
# The --html page renders in headless Chromium (when installed; skipped with a
# visible reason otherwise) at 1400 and 800 px wide, 2000 high: screenshots are
# made, are not blank, show the broken captures, and the timeline fits the
# width; "What to do" lies in the first 1000 px (the first screen).
. "$(dirname "$0")/lib.sh"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium installed (apt-get install -y chromium) - the HTML render check did not run"
  exit 77
fi
page=$WORK/r.html
"$CAPGUARD" report --all --html "$page" "$DATA/run1.jsonl" "$DATA/run2.jsonl" >/dev/null 2>&1
# the page as made, "What to do"'s heading painted a green no other pixel has,
# to be found in the screenshot (the colour changes no layout)
h=$WORK/marked.html
sed 's|</style>|#what-to-do{background:#00ff00}</style>|' "$page" >"$h"
grep -q '#what-to-do{background:#00ff00}' "$h" && pass || fail "the page has no style to mark"
# a wide screen and a narrow one: the page must fit both (the timeline scales, tables wrap)
for width in 1400 800; do
  png=${CAPGUARD_HTML_PNG:-$WORK/r}-$width.png
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$WORK/profile" \
    --screenshot="$png" --window-size=$width,2000 "file://$h" >"$WORK/chromium.log" 2>&1
  [ -s "$png" ] && pass || { fail "chromium made no screenshot at $width px"; sed 's/^/    | /' "$WORK/chromium.log" >&2; continue; }
  # not blank, the broken captures drawn in red, and the timeline as wide as the page:
  # the SVG's border reaches the right side but is not cut off by it
  python3 - "$png" "$width" <<'PY' >"$WORK/png" 2>&1 && pass || fail "screenshot at $width px: $(cat "$WORK/png")"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
want_w = int(sys.argv[2])
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", d[16:24])
assert (w, h) == (want_w, 2000), (w, h)
pos, idat = 8, b""
while pos < len(d):
    n, = struct.unpack(">I", d[pos:pos+4]); t = d[pos+4:pos+8]
    if t == b"IDAT": idat += d[pos+8:pos+8+n]
    pos += 12 + n
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}[d[25]]
stride = w * bpp
colours = set()
prev = bytearray(stride)
rows = []
i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i+1:i+1+stride]); i += 1 + stride
    for x in range(stride):
        a = line[x-bpp] if x >= bpp else 0; b = prev[x]; c = prev[x-bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p-a), abs(p-b), abs(p-c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    rows.append(bytes(line))
    if y % 4 == 0:
        for x in range(0, stride, bpp * 2): colours.add(bytes(line[x:x+3]))
px = lambda x, y: rows[y][x*bpp:x*bpp+3]
# "What to do": its heading's green, in the first screen
green = [y for y in range(0, h, 2) if any(px(x, y) == b"\x00\xff\x00" for x in range(0, w, 5))]
assert green, "no 'What to do' heading drawn"
assert green[0] < 1000, f"'What to do' starts at y={green[0]}, below the first 1000 px"
red = sum(1 for c in colours if c[0] > 180 and c[1] < 120 and c[2] < 120)
assert len(colours) > 20, f"only {len(colours)} colours: blank page?"
assert red > 0, "no red (broken capture / refused call) drawn"
# the timeline's background is #fcfcfc (nothing else is): its right end must be
# near the page's right side, and closed by the SVG's #ddd border (not cut off)
# (runs of it 100 px or longer: a scrollbar's few pixels of that grey are not the timeline)
ends = []
for y in range(0, h, 2):
    run = 0
    for x in range(w + 1):
        if x < w and px(x, y) == b"\xfc\xfc\xfc":
            run += 1
        else:
            if run >= 100: ends.append(x - 1)
            run = 0
assert ends, "no timeline drawn"
# the timeline is a box many rows tall: an end shared by 10 sampled rows (20 px) or more (a
# table's horizontal scrollbar track, a few rows of light grey, is not it)
right = max(x for x in set(ends) if ends.count(x) >= 10)
assert right >= 0.85 * (w - 20), f"timeline ends at x={right}: narrower than the page ({w} px)"
closed = sum(1 for y in range(h) if px(right, y) == b"\xfc\xfc\xfc" and
             any(px(x, y) == b"\xdd\xdd\xdd" for x in range(right + 1, min(right + 3, w))))
assert closed > 30, f"timeline cut off at x={right} by the window ({w} px): no border after it"
PY
done
finish
