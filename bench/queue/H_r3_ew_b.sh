# limit: 30
# Issue #13, session 24 (helper H), round 3: H_r3_ew_a.sh's timing of the rows this morning's table
# had under 1.0x torch, for the binary half (and the f32 convert rows: 4 elements a thread now, 8
# before; ew_runs 1 of 62db304, with e03d36f's flat copies).
H_PART=b H_NAMES=add,mul,convert,div,sub,copysign,leaky_relu_bwd,add_scalar,mul_scalar,maximum,minimum,fmod,relu_bwd,sigmoid_bwd,lerp,clamp_tensor,addcmul,addcdiv \
  bash bench/queue/H_r3_ew_a.sh
