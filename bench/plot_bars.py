#!/usr/bin/env python3
"""Draws the medians of a benchmark results file as a horizontal bar chart (SVG,
no dependencies): bench/plot_bars.py RESULTS.json OUT.svg [TITLE]"""
import json, os, sys

results = json.load(open(sys.argv[1]))
medians = results["medians_s"]
width, bar, gap, left = 640, 26, 10, 120
scale = (width - left - 90) / max(medians.values())
height = len(medians) * (bar + gap) + 50
rows = []
for i, (name, seconds) in enumerate(medians.items()):
    y = 30 + i * (bar + gap)
    color = "#2b7bb9" if name.startswith("envkit") else "#999999"
    rows.append(f'<text x="{left - 8}" y="{y + bar * 0.7}" text-anchor="end">{name}</text>'
                f'<rect x="{left}" y="{y}" width="{seconds * scale:.1f}" height="{bar}" fill="{color}"/>'
                f'<text x="{left + seconds * scale + 6:.1f}" y="{y + bar * 0.7}">{seconds:.2f} s</text>')
title = sys.argv[3] if len(sys.argv) > 3 else \
    "Install of the same NVIDIA wheels from 127.0.0.1 (median, lower is better)"
svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
       f'font-family="sans-serif" font-size="13"><rect width="100%" height="100%" fill="white"/>'
       f'<text x="10" y="18" font-weight="bold">{title}</text>{"".join(rows)}</svg>\n')
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
open(sys.argv[2], "w").write(svg)
