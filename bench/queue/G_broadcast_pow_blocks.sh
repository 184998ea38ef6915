#!/bin/bash
# limit: 30
# Helper G, session 28 (#13): should std.broadcast's pow f16 take BLOCKS = 8 on sm_90a (a
# stdlib/config.json rule), though its generic build then spills?  Session 28's H200
# (bench/results/q_G_ops_weak_rows-h200-twentyeighth.txt, the switches' process, RARE_POW_SPECIALS
# on as it is by default now, outputs checked first): the table's row (y (4, 4, 1024, 8192) f16, a
# whole, b (1, 4, 1, 8192)) 213.4 us at the default (0.59 of copy) against 184.5 at BLOCKS = 8
# (0.68), 1.157x.  That row runs the whole-runs build.  CPU (nvcc 13.0 -cubin -arch=sm_90a
# -Xptxas -v, the kernel as tlc generates it with A3, B3 not 1): whole-runs build 110 registers
# at the default, 64 at BLOCKS = 8, no spills; the generic build (a launch whose rows are not
# whole 16-byte runs) 96 registers, none, against 64 and 8 bytes of spill stores / loads at
# BLOCKS = 8 (72 and 4 bytes at 7).  So the rule was not made: the brief's "no new spills".
# Two processes, each row's output checked against PyTorch's float64 result before it is timed:
# the table's shape, and N = 8191 (ragged: the generic build, where the spill is).
# Answer: default -> BLOCKS=8 at each shape.  If BLOCKS = 8 gains 2% or more at the table's shape
# and loses no more than 1% at the ragged one, add the rule (broadcast.tl pow, arch sm_90a, when
# T f16, BLOCKS 8) citing both; else leave pow's BLOCKS at the .tl's 0.
export PYTHONUNBUFFERED=1
python3 bench/ops_variants.py --min-ms 20 broadcast.pow BLOCKS=8 2>&1
python3 bench/ops_variants.py --min-ms 20 --shape 16384,8191 broadcast.pow BLOCKS=8 2>&1
