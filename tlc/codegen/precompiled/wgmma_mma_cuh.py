from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'wgmma_mma.cuh.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_n = resolve('n')
    l_0_k = resolve('k')
    l_0_a_ptx = resolve('a_ptx')
    l_0_b_ptx = resolve('b_ptx')
    l_0_acc_ptx = resolve('acc_ptx')
    l_0_n_major_b = resolve('n_major_b')
    l_0_name = resolve('name')
    l_0_acc = resolve('acc')
    l_0_register_a = resolve('register_a')
    l_0_range = resolve('range')
    l_0_immediates = resolve('immediates')
    l_0_scale_d = resolve('scale_d')
    pass
    yield '// wgmma.mma_async.m64n'
    yield str((undefined(name='n') if l_0_n is missing else l_0_n))
    yield 'k'
    yield str((undefined(name='k') if l_0_k is missing else l_0_k))
    yield ' for '
    yield str((undefined(name='a_ptx') if l_0_a_ptx is missing else l_0_a_ptx))
    yield ' x '
    yield str((undefined(name='b_ptx') if l_0_b_ptx is missing else l_0_b_ptx))
    yield ' operands, '
    yield str((undefined(name='acc_ptx') if l_0_acc_ptx is missing else l_0_acc_ptx))
    yield ' accumulation'
    if (undefined(name='n_major_b') if l_0_n_major_b is missing else l_0_n_major_b):
        pass
        yield ', B N-major'
    yield '.\nstruct '
    yield str((undefined(name='name') if l_0_name is missing else l_0_name))
    yield ' {\n  static constexpr int N = '
    yield str((undefined(name='n') if l_0_n is missing else l_0_n))
    yield ';\n  static constexpr int REGS = '
    yield str(((undefined(name='n') if l_0_n is missing else l_0_n) // 2))
    yield ';\n  static constexpr int K = '
    yield str((undefined(name='k') if l_0_k is missing else l_0_k))
    yield ';\n  using Acc = '
    yield str((undefined(name='acc') if l_0_acc is missing else l_0_acc))
    yield ';'
    if (undefined(name='register_a') if l_0_register_a is missing else l_0_register_a):
        pass
        yield '\n  // A in registers: four f16x2 / bf16x2 of this thread\'s rows (tl::a_from_registers).\n  __device__ static __forceinline__ void run(Acc* d, const unsigned (&a)[4], unsigned long long b) {\n    asm volatile(\n        "wgmma.mma_async.sync.aligned.m64n'
        yield str((undefined(name='n') if l_0_n is missing else l_0_n))
        yield 'k'
        yield str((undefined(name='k') if l_0_k is missing else l_0_k))
        yield '.'
        yield str((undefined(name='acc_ptx') if l_0_acc_ptx is missing else l_0_acc_ptx))
        yield '.'
        yield str((undefined(name='a_ptx') if l_0_a_ptx is missing else l_0_a_ptx))
        yield '.'
        yield str((undefined(name='b_ptx') if l_0_b_ptx is missing else l_0_b_ptx))
        yield ' "\n        "{'
        l_1_loop = missing
        for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
            _loop_vars = {}
            pass
            yield '%'
            yield str(l_1_i)
            yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 12 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
        l_1_loop = l_1_i = missing
        yield '}, "\n        "{%'
        yield str(((undefined(name='n') if l_0_n is missing else l_0_n) // 2))
        yield ', %'
        yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 1))
        yield ', %'
        yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 2))
        yield ', %'
        yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 3))
        yield '}, %'
        yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 4))
        yield ', 1'
        for l_1_imm in (undefined(name='immediates') if l_0_immediates is missing else l_0_immediates):
            _loop_vars = {}
            pass
            yield ', '
            yield str(l_1_imm)
        l_1_imm = missing
        yield ';\\n"\n        : '
        l_1_loop = missing
        for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
            l_1_constraint = resolve('constraint')
            _loop_vars = {}
            pass
            yield '"+'
            yield str((undefined(name='constraint') if l_1_constraint is missing else l_1_constraint))
            yield '"(d['
            yield str(l_1_i)
            yield '])'
            yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 14 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
            if ((environment.getattr(l_1_loop, 'index') % 8) == 0):
                pass
                yield '\n          '
        l_1_loop = l_1_i = l_1_constraint = missing
        yield '\n        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b)\n        : "memory");\n  }'
        if (undefined(name='scale_d') if l_0_scale_d is missing else l_0_scale_d):
            pass
            yield '\n  // With scale_d 0 the accumulator\'s values are ignored (d = A @ B): a clear with no instruction\n  // writing the registers, which a wgmma still in flight would serialize behind (ptxas\'s C7515).\n  __device__ static __forceinline__ void run(Acc* d, const unsigned (&a)[4], unsigned long long b, int scale_d) {\n    asm volatile(\n        "{\\n.reg .pred p;\\nsetp.ne.b32 p, %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 5))
            yield ', 0;\\n"\n        "wgmma.mma_async.sync.aligned.m64n'
            yield str((undefined(name='n') if l_0_n is missing else l_0_n))
            yield 'k'
            yield str((undefined(name='k') if l_0_k is missing else l_0_k))
            yield '.'
            yield str((undefined(name='acc_ptx') if l_0_acc_ptx is missing else l_0_acc_ptx))
            yield '.'
            yield str((undefined(name='a_ptx') if l_0_a_ptx is missing else l_0_a_ptx))
            yield '.'
            yield str((undefined(name='b_ptx') if l_0_b_ptx is missing else l_0_b_ptx))
            yield ' "\n        "{'
            l_1_loop = missing
            for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
                _loop_vars = {}
                pass
                yield '%'
                yield str(l_1_i)
                yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 26 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
            l_1_loop = l_1_i = missing
            yield '}, "\n        "{%'
            yield str(((undefined(name='n') if l_0_n is missing else l_0_n) // 2))
            yield ', %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 1))
            yield ', %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 2))
            yield ', %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 3))
            yield '}, %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 4))
            yield ', p'
            for l_1_imm in (undefined(name='immediates') if l_0_immediates is missing else l_0_immediates):
                _loop_vars = {}
                pass
                yield ', '
                yield str(l_1_imm)
            l_1_imm = missing
            yield ';\\n}\\n"\n        : '
            l_1_loop = missing
            for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
                l_1_constraint = resolve('constraint')
                _loop_vars = {}
                pass
                yield '"+'
                yield str((undefined(name='constraint') if l_1_constraint is missing else l_1_constraint))
                yield '"(d['
                yield str(l_1_i)
                yield '])'
                yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 28 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
                if ((environment.getattr(l_1_loop, 'index') % 8) == 0):
                    pass
                    yield '\n          '
            l_1_loop = l_1_i = l_1_constraint = missing
            yield '\n        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d)\n        : "memory");\n  }'
    else:
        pass
        yield '\n  __device__ static __forceinline__ void run(Acc* d, unsigned long long a, unsigned long long b) {\n    asm volatile(\n        "wgmma.mma_async.sync.aligned.m64n'
        yield str((undefined(name='n') if l_0_n is missing else l_0_n))
        yield 'k'
        yield str((undefined(name='k') if l_0_k is missing else l_0_k))
        yield '.'
        yield str((undefined(name='acc_ptx') if l_0_acc_ptx is missing else l_0_acc_ptx))
        yield '.'
        yield str((undefined(name='a_ptx') if l_0_a_ptx is missing else l_0_a_ptx))
        yield '.'
        yield str((undefined(name='b_ptx') if l_0_b_ptx is missing else l_0_b_ptx))
        yield ' "\n        "{'
        l_1_loop = missing
        for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
            _loop_vars = {}
            pass
            yield '%'
            yield str(l_1_i)
            yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 38 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
        l_1_loop = l_1_i = missing
        yield '}, "\n        "%'
        yield str(((undefined(name='n') if l_0_n is missing else l_0_n) // 2))
        yield ', %'
        yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 1))
        yield ', 1'
        for l_1_imm in (undefined(name='immediates') if l_0_immediates is missing else l_0_immediates):
            _loop_vars = {}
            pass
            yield ', '
            yield str(l_1_imm)
        l_1_imm = missing
        yield ';\\n"\n        : '
        l_1_loop = missing
        for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
            l_1_constraint = resolve('constraint')
            _loop_vars = {}
            pass
            yield '"+'
            yield str((undefined(name='constraint') if l_1_constraint is missing else l_1_constraint))
            yield '"(d['
            yield str(l_1_i)
            yield '])'
            yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 40 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
            if ((environment.getattr(l_1_loop, 'index') % 8) == 0):
                pass
                yield '\n          '
        l_1_loop = l_1_i = l_1_constraint = missing
        yield '\n        : "l"(a), "l"(b)\n        : "memory");\n  }'
        if (undefined(name='scale_d') if l_0_scale_d is missing else l_0_scale_d):
            pass
            yield '\n  // With scale_d 0 the accumulator\'s values are ignored (d = A @ B): a clear with no instruction\n  // writing the registers, which a wgmma still in flight would serialize behind (ptxas\'s C7515).\n  __device__ static __forceinline__ void run(Acc* d, unsigned long long a, unsigned long long b, int scale_d) {\n    asm volatile(\n        "{\\n.reg .pred p;\\nsetp.ne.b32 p, %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 2))
            yield ', 0;\\n"\n        "wgmma.mma_async.sync.aligned.m64n'
            yield str((undefined(name='n') if l_0_n is missing else l_0_n))
            yield 'k'
            yield str((undefined(name='k') if l_0_k is missing else l_0_k))
            yield '.'
            yield str((undefined(name='acc_ptx') if l_0_acc_ptx is missing else l_0_acc_ptx))
            yield '.'
            yield str((undefined(name='a_ptx') if l_0_a_ptx is missing else l_0_a_ptx))
            yield '.'
            yield str((undefined(name='b_ptx') if l_0_b_ptx is missing else l_0_b_ptx))
            yield ' "\n        "{'
            l_1_loop = missing
            for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
                _loop_vars = {}
                pass
                yield '%'
                yield str(l_1_i)
                yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 52 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
            l_1_loop = l_1_i = missing
            yield '}, "\n        "%'
            yield str(((undefined(name='n') if l_0_n is missing else l_0_n) // 2))
            yield ', %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 1))
            yield ', p'
            for l_1_imm in (undefined(name='immediates') if l_0_immediates is missing else l_0_immediates):
                _loop_vars = {}
                pass
                yield ', '
                yield str(l_1_imm)
            l_1_imm = missing
            yield ';\\n}\\n"\n        : '
            l_1_loop = missing
            for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
                l_1_constraint = resolve('constraint')
                _loop_vars = {}
                pass
                yield '"+'
                yield str((undefined(name='constraint') if l_1_constraint is missing else l_1_constraint))
                yield '"(d['
                yield str(l_1_i)
                yield '])'
                yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 54 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
                if ((environment.getattr(l_1_loop, 'index') % 8) == 0):
                    pass
                    yield '\n          '
            l_1_loop = l_1_i = l_1_constraint = missing
            yield '\n        : "l"(a), "l"(b), "r"(scale_d)\n        : "memory");\n  }\n  // scale_d 0 where the caller knows it (the first K step of a product that starts from zero):\n  // the accumulator only written ("="), so that nvcc keeps no value of its registers alive up to\n  // here (a partial-sum fragment scaled and added out of them: one FFMA a register, not FMUL + FADD)\n  __device__ static __forceinline__ void zero(Acc* d, unsigned long long a, unsigned long long b) {\n    asm volatile(\n        "{\\n.reg .pred p;\\nsetp.ne.b32 p, %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 2))
            yield ', 0;\\n"\n        "wgmma.mma_async.sync.aligned.m64n'
            yield str((undefined(name='n') if l_0_n is missing else l_0_n))
            yield 'k'
            yield str((undefined(name='k') if l_0_k is missing else l_0_k))
            yield '.'
            yield str((undefined(name='acc_ptx') if l_0_acc_ptx is missing else l_0_acc_ptx))
            yield '.'
            yield str((undefined(name='a_ptx') if l_0_a_ptx is missing else l_0_a_ptx))
            yield '.'
            yield str((undefined(name='b_ptx') if l_0_b_ptx is missing else l_0_b_ptx))
            yield ' "\n        "{'
            l_1_loop = missing
            for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
                _loop_vars = {}
                pass
                yield '%'
                yield str(l_1_i)
                yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 66 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
            l_1_loop = l_1_i = missing
            yield '}, "\n        "%'
            yield str(((undefined(name='n') if l_0_n is missing else l_0_n) // 2))
            yield ', %'
            yield str((((undefined(name='n') if l_0_n is missing else l_0_n) // 2) + 1))
            yield ', p'
            for l_1_imm in (undefined(name='immediates') if l_0_immediates is missing else l_0_immediates):
                _loop_vars = {}
                pass
                yield ', '
                yield str(l_1_imm)
            l_1_imm = missing
            yield ';\\n}\\n"\n        : '
            l_1_loop = missing
            for l_1_i, l_1_loop in LoopContext(context.call((undefined(name='range') if l_0_range is missing else l_0_range), ((undefined(name='n') if l_0_n is missing else l_0_n) // 2)), undefined):
                l_1_constraint = resolve('constraint')
                _loop_vars = {}
                pass
                yield '"='
                yield str((undefined(name='constraint') if l_1_constraint is missing else l_1_constraint))
                yield '"(d['
                yield str(l_1_i)
                yield '])'
                yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 68 in 'wgmma_mma.cuh.j2' evaluated to false and no else section was defined.")))
                if ((environment.getattr(l_1_loop, 'index') % 8) == 0):
                    pass
                    yield '\n          '
            l_1_loop = l_1_i = l_1_constraint = missing
            yield '\n        : "l"(a), "l"(b), "r"(0)\n        : "memory");\n  }'
    yield '\n};\n'

blocks = {}
debug_info = '1=24&2=38&3=40&4=42&5=44&6=46&7=48&11=51&12=62&13=70&14=88&19=103&24=106&25=108&26=119&27=127&28=145&37=163&38=174&39=182&40=194&45=209&50=212&51=214&52=225&53=233&54=245&64=260&65=262&66=273&67=281&68=293'
