# limit: 200
# Session 20 changed the copies and the math of these kernels and ran their GPU tests (tests/gpu:
# 1774 passed at c6d1562), but its device time ran out before compute-sanitizer: a178eb5 / 5e739d6
# (1-byte fragments copied and computed as words), c485a8e / 3b08c0f (a load batch's bounds test
# hoisted), 0c87ebe (16-bit loads not converted), dd15f7e (column loops split), a811086
# (unsigned // and % by grid sizes), 96e1683 (hypot, fast sin / cos), 39ffe9d (rope, geglu,
# batch_norm).  Question: memcheck clean at their ragged shapes, f16 and bool?
compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/run-all-kernels \
  'sin (37, 45) f16' 'hypot (37, 45) f16' 'logical_and (37, 45) bool' 'logical_or (37, 45) bool' \
  'logical_xor (37, 45) bool' 'logical_not (37, 45) bool' 'where (37, 45) f16' \
  'sum_axis0 37x300 f16' 'sum_axis0 1x77 f16' 'var_axis0 37x300 f16' 'any_axis0 37x300 f16' \
  'norm_inf_axis0 37x300 f16' 'index_select (1, 1000, 1, 300) f16' 'index_select (3, 5, 33, 8) f16' \
  'rope (5, 3, 16) f16' 'rope (3, 2, 6) f16' 'geglu (9, 70) f16' 'geglu (3, 300) f16' \
  'batch_norm (3, 5, 37) f16' 'batch_norm (2, 3, 300) f16' 2>&1 | grep -E "^(ok|FAIL)|ERROR SUMMARY|run-all-kernels" | tail -40
