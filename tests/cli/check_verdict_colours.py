#!/usr/bin/env python3
"""The HTML legend tells verdicts apart by colour alone: every verdict has a
colour in the page's switch (tools/render/html_cells.c), no two share
one, and none is near another or near the legend's capture boxes (at least
60 apart in RGB; failed's brown and deferred-destroy's sienna were 36)."""
import re, sys, itertools, pathlib

src = pathlib.Path(sys.argv[1], "tools/render/html_cells.c").read_text()
schema = pathlib.Path(sys.argv[1], "detect/include/capguard/log_schema.h").read_text()
verdicts = re.findall(r"X\((CG_VERDICT_\w+),", schema)
colours = dict(re.findall(r"case (CG_VERDICT_\w+):\s*return \"(#[0-9a-fA-F]{6})\";", src))
boxes = {f"capture box {c}": c for c in ("#b9e3b9", "#f4b6b6", "#dddddd")}
missing = [v for v in verdicts if v not in colours]
if not verdicts or missing:
    sys.exit(f"verdicts without a colour in html_cells.c: {missing or 'none found in the schema'}")

def rgb(c):
    return [int(c[i:i + 2], 16) for i in (1, 3, 5)]

def dist(a, b):
    return sum((x - y) ** 2 for x, y in zip(rgb(a), rgb(b))) ** 0.5

bad = []
for (n, a), (m, b) in itertools.combinations(list(colours.items()) + list(boxes.items()), 2):
    if n in boxes and m in boxes:
        continue
    if dist(a, b) < 60:
        bad.append(f"{n} ({a}) and {m} ({b}): {dist(a, b):.0f} apart")
if bad:
    sys.exit("colours too close for the legend:\n" + "\n".join(bad))
print(f"{len(colours)} verdict colours, each at least 60 from the others and from the capture boxes")
