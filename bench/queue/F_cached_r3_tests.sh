# limit: 30
# Issue #15, session 24 round 3 (helper F): the gpu tests of what helper F touched: the cached
# call on the GPU itself, entries a 'tlc' of another identity stored never launched when the
# checkout memo is stale (tests/gpu/test_cached_call_gpu.py, 5 processes, 3 NVRTC compiles, each
# product checked), and the program cache's planted entry rebuilt, not run
# (tests/runtime/test_ir_codec.py).
timeout 29 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cached_call_gpu.py tests/runtime/test_ir_codec.py 2>&1 | tail -15
