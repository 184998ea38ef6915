"""Templates compiled by Jinja, written by scripts/precompile-templates: do not edit (see
tlc/codegen/precompiled_loader.py).  The modules are never imported: their code runs as
Jinja runs the code it compiles, with `environment` given."""

KEYS = {
    'kernel.cu.j2': '3e917ddc504807901556ac19726df03e0f51f8409aa12b3244e766d5d004ebf1',
    'wgmma_mma.cuh.j2': '33386349ea132b4c25f0a2c6e711e14f889474f28b05c3585b4a67a89edfed35',
    'grids.cu.j2': 'c6808aa83ac7c2912590cd7968e9267663bb1230a736dd184ac731cc16f2d564',
    'header.h.j2': '582d2dcbda12a6c0b1d63e497426ec68b7239bb10c10b256aafe6cc92388835f',
    'cpp/kernel.cpp.j2': 'e6ebc3949dc415cce286c516de760f7e526159fc49215d77269e036334c90c07',
}
