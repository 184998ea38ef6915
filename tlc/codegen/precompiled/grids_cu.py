from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'grids.cu.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_workspaces = resolve('workspaces')
    l_0_name = resolve('name')
    l_0_size_params = resolve('size_params')
    l_0_parts = resolve('parts')
    l_0_launcher = resolve('launcher')
    l_0_launcher_params = resolve('launcher_params')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    try:
        t_2 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_3 = environment.filters['map']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'map' found.")
    pass
    yield '\n#ifndef __CUDACC_RTC__\n'
    if (undefined(name='workspaces') if l_0_workspaces is missing else l_0_workspaces):
        pass
        yield '// The device memory launch_'
        yield str((undefined(name='name') if l_0_name is missing else l_0_name))
        yield ' needs for its workspaces ('
        yield str(t_1(context.eval_ctx, t_3(context, (undefined(name='workspaces') if l_0_workspaces is missing else l_0_workspaces), attribute='name'), ', '))
        yield '), each at a\n// multiple of 256 bytes of it.\nextern "C" unsigned long long '
        yield str((undefined(name='name') if l_0_name is missing else l_0_name))
        yield '_workspace_bytes('
        yield str(t_1(context.eval_ctx, (undefined(name='size_params') if l_0_size_params is missing else l_0_size_params), ', '))
        yield ') {\n  return 0ull'
        for l_1_w in (undefined(name='workspaces') if l_0_workspaces is missing else l_0_workspaces):
            _loop_vars = {}
            pass
            yield ' + '
            yield str(environment.getattr(l_1_w, 'bytes'))
        l_1_w = missing
        yield ';\n}\n\n'
    yield '// '
    yield str((undefined(name='name') if l_0_name is missing else l_0_name))
    yield ': its '
    yield str(t_2((undefined(name='parts') if l_0_parts is missing else l_0_parts)))
    yield ' grid'
    yield str(('s' if (t_2((undefined(name='parts') if l_0_parts is missing else l_0_parts)) > 1) else ''))
    yield ', launched one after another on `stream`; the first\n// launcher to return an error stops it and returns that error.'
    if (undefined(name='workspaces') if l_0_workspaces is missing else l_0_workspaces):
        pass
        yield '  `workspace` is device\n// memory of at least '
        yield str((undefined(name='name') if l_0_name is missing else l_0_name))
        yield '_workspace_bytes(...) bytes, its contents undefined.'
    yield '\nextern "C" cudaError_t '
    yield str((undefined(name='launcher') if l_0_launcher is missing else l_0_launcher))
    yield '('
    yield str(t_1(context.eval_ctx, (undefined(name='launcher_params') if l_0_launcher_params is missing else l_0_launcher_params), ', '))
    yield ') {\n'
    if (undefined(name='workspaces') if l_0_workspaces is missing else l_0_workspaces):
        pass
        yield '  unsigned char* tl_at = static_cast<unsigned char*>(workspace);\n'
        for l_1_w in (undefined(name='workspaces') if l_0_workspaces is missing else l_0_workspaces):
            _loop_vars = {}
            pass
            yield '  '
            yield str(environment.getattr(l_1_w, 'type'))
            yield '* const '
            yield str(environment.getattr(l_1_w, 'name'))
            yield ' = reinterpret_cast<'
            yield str(environment.getattr(l_1_w, 'type'))
            yield '*>(tl_at);\n  tl_at += '
            yield str(environment.getattr(l_1_w, 'bytes'))
            yield ';\n'
        l_1_w = missing
    for l_1_part in (undefined(name='parts') if l_0_parts is missing else l_0_parts):
        l_1_call_args = resolve('call_args')
        _loop_vars = {}
        pass
        yield '  {\n    const cudaError_t tl_err = '
        yield str(l_1_part)
        yield '('
        yield str(t_1(context.eval_ctx, (undefined(name='call_args') if l_1_call_args is missing else l_1_call_args), ', '))
        yield ');\n    if (tl_err != cudaSuccess) return tl_err;\n  }\n'
    l_1_part = l_1_call_args = missing
    yield '  return cudaSuccess;\n}\n#endif\n'

blocks = {}
debug_info = '3=36&5=43&6=47&9=55&10=61&11=64&12=67&13=71&14=74&15=84&16=87&17=92'
