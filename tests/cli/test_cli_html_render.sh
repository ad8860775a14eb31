#!/usr/bin/env bash
# The --html page renders in headless Chromium (when installed; skipped with a
# visible reason otherwise): a screenshot is made and is not blank.
. "$(dirname "$0")/lib.sh"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium installed (apt-get install -y chromium) - the HTML render check did not run"
  exit 77
fi
h=$WORK/r.html
"$CAPGUARD" report --all --html "$h" "$DATA/run1.jsonl" "$DATA/run2.jsonl" >/dev/null 2>&1
png=${CAPGUARD_HTML_PNG:-$WORK/r.png}
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$WORK/profile" \
  --screenshot="$png" --window-size=1200,800 "file://$h" >"$WORK/chromium.log" 2>&1
[ -s "$png" ] && pass || { fail "chromium made no screenshot"; sed 's/^/    | /' "$WORK/chromium.log" >&2; }
# not blank: a page of one colour compresses to almost nothing; ours has text, boxes and markers
python3 - "$png" <<'PY' >"$WORK/png" 2>&1 && pass || fail "screenshot: $(cat "$WORK/png")"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", d[16:24])
assert (w, h) == (1200, 800), (w, h)
# decode the image and count distinct colours
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
    if y % 4 == 0:
        for x in range(0, stride, bpp * 2): colours.add(bytes(line[x:x+3]))
red = sum(1 for c in colours if c[0] > 180 and c[1] < 120 and c[2] < 120)
assert len(colours) > 20, f"only {len(colours)} colours: blank page?"
assert red > 0, "no red (broken capture / refused call) drawn"
PY
finish
