#!/usr/bin/env bash
# limit: 25
# Asks (#19: decode_f16_paged 0.91x cuDNN against the contiguous cache's 0.97x, session 25's
# final table): what the paged cache costs. bench/decode_paged.py times, in one process with
# cuDNN on the contiguous cache, flash_decode (contig, and contig3: 3 stages, 2 blocks an SM) and
# flash_decode_paged on vLLM's layout with the pages shuffled (paged; paged3: 3 stages), in
# order (inorder: what the table's order costs, TLB and DRAM pages), and one KV head a page
# (hnd: a page's keys one 16 KB run, where vLLM's layout reads 64 runs of 256 bytes 8 KB apart).
# CPU (nvcc 13.0 sm_90a): the paged loop is 756 SASS a step against contiguous's 692 (the table's
# lookups, an iteration ahead, and 64-bit row strides), 80 registers against 96, no spills, both
# 3 blocks an SM (70 KB of shared memory each): the instructions alone do not explain 6%.
# Every O checked against the f32 reference (16 f16 units) before it is timed.
# Answer: each row's GB/s and x cuDNN. inorder ~ contig: the page order (TLB reach) costs it;
# hnd ~ contig: the 256-byte runs do; paged3 > paged: a deeper ring (flip the sm_90a rule:
# STAGES 3, BLOCKS 264 for flash_decode_paged); contig3 > contig likewise for flash_decode.
export PYTHONUNBUFFERED=1
python3 bench/decode_paged.py --rows mha,gqa --min-ms 100 2>&1
