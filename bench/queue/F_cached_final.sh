# limit: 45
# Issue #15, session 24 round 3 (helper F): the cached first call with what helper F left default,
# a checkout and an installed snapshot of the same tree (first_cached_host.py --snapshot: tlc/ with
# its data folders inside and a RECORD, as a wheel installs it; the device builds no wheel), each
# product checked (C == 256) after the clock.  This morning (a checkout): load + call median
# 3.99 ms.  Round 2 (F_cached_call.sh) measured a thread that stat()ed the checkout beside the
# module load: 5.71 ms, no overlap (backed out in 2f09a1c / e874399); what stays: the memo's
# format 3, a file read in one os.read (342 -> ~315 system calls in the stood-in call, 9 -> 7
# files opened: config.json vouched for by its stamp), the data folders and the cache folder made
# once, where round 2 showed resolve_path 0.247 -> 0.156, read_source 0.176 -> 0.122,
# LaunchMemo.lookup 0.181 -> 0.142 ms.  An installed tlc's identity is its RECORD (one read) where
# a checkout's is ~250 stat()s (0.93 ms on the H200): the snapshot is what a user's pip install
# runs.  1 timed process each (no step clocks; ~5 s a process with torch), after one that fills a fresh cache.
timeout 20 python3 bench/first_cached_host.py --gpu --runs 1 2>&1 | tail -4
timeout 23 python3 bench/first_cached_host.py --gpu --runs 1 --snapshot 2>&1 | tail -4
