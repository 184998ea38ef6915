"""Barriers: a `Sync` wherever one thread may read shared memory that another wrote (RAW),
overwrite what another may still read (WAR) or write what another wrote (WAW), since the last
barrier.  Two `parallel` loops of one layout that write a buffer each at its own index (the
loop's variables, in order) write every element from the same thread, so the second needs no
barrier for the first's writes; a write at any other index (`tstart[d] = q` of a digit d
read from memory) may land on an element another thread wrote.  Copies, gemms, fills,
reductions and parallel loops all touch shared memory from many threads.  Buffers whose
lifetimes do not overlap share bytes (the shared-memory plan reuses them), so a buffer is
touched wherever any buffer holding some of its bytes is: the first write of the later one
must wait for the last reads of the earlier."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statement_exprs, statements, subexprs


def insert_barriers(kernel: ir.Kernel) -> ir.Kernel:
    buffers = [b for b in kernel.buffers if b.scope == "shared"]
    if not buffers:
        return kernel
    body, _ = _block(kernel.body, _aliases(buffers), (set(), set(), {}))
    return replace(kernel, body=body)


def _aliases(buffers) -> dict[str, frozenset]:
    """Each shared buffer -> the buffers whose bytes overlap its own (itself included); before
    the plan has placed them (no offsets), each only itself."""
    def extent(b):
        if b.smem_offset is None or b.layout is None:
            return None
        return b.smem_offset, b.smem_offset + b.layout.bytes

    out = {}
    for b in buffers:
        mine = extent(b)
        out[b.name] = frozenset(
            c.name for c in buffers
            if c.name == b.name or (mine and extent(c) and mine[0] < extent(c)[1] and extent(c)[0] < mine[1]))
    return out


def _touches(s, aliases) -> tuple[set, set]:
    """(reads, writes) of shared bytes by a statement and everything inside it, as the names of
    every buffer that holds them."""
    reads, writes = _named_touches(s, aliases.keys())
    return ({a for r in reads for a in aliases[r]}, {a for w in writes for a in aliases[w]})


def _named_touches(s, shared) -> tuple[set, set]:
    """(reads, writes) of shared buffers by a statement and everything inside it."""
    reads, writes = set(), set()
    for x in statements([s]):
        if isinstance(x, ir.Copy):
            if x.src.name in shared:
                reads.add(x.src.name)
            if x.dst.name in shared:
                writes.add(x.dst.name)
        elif isinstance(x, ir.Gemm):
            reads |= {x.a, x.b} & shared
        elif isinstance(x, ir.Fill) and x.buffer in shared:
            writes.add(x.buffer)
        elif isinstance(x, ir.Reduce):
            if x.src in shared:
                reads.add(x.src)
            if x.dst in shared:
                writes.add(x.dst)
                if not x.clear:
                    reads.add(x.dst)
        elif isinstance(x, ir.Scan):  # a warp per line: lines other threads wrote, sums they read
            reads |= {x.src} & shared  # (a fragment's scan meets in a scratch array of its own barriers)
            writes |= {x.dst} & shared
        elif isinstance(x, (ir.Store, ir.Atomic)) and x.name in shared:
            writes.add(x.name)
        for e in statement_exprs(x):
            for y in subexprs(e):
                if isinstance(y, ir.Load) and y.name in shared:
                    reads.add(y.name)
    return reads, writes


def _own_writes(s, shared) -> dict:
    """Each shared buffer a `parallel` loop writes -> its layout where every write of it is a
    store at the loop's own index (its variables, in order), else None; {} for any other
    statement (whose writes are never its own)."""
    if not isinstance(s, ir.Parallel):
        return {}
    own = {}
    for x in statements(s.body):
        if isinstance(x, (ir.Store, ir.Atomic)) and x.name in shared:
            mine = (isinstance(x, ir.Store) and len(x.indices) == len(s.vars)
                    and all(isinstance(i, ir.Var) and i.name == v for i, v in zip(x.indices, s.vars)))
            own[x.name] = s.layout if mine and own.get(x.name, s.layout) is not None else None
    return own


def _block(stmts, aliases, state):
    """Insert syncs into one statement list; `state` is (read, written, owners) since the last
    sync, owners: each written buffer -> the layout of the parallel loops that wrote it each at
    its own index (None: written otherwise)."""
    read, written = set(state[0]), set(state[1])
    owners = dict(state[2])
    out = []
    for s in stmts:
        if isinstance(s, ir.Sync):
            read, written, owners = set(), set(), {}
            out.append(s)
            continue
        r, w = _touches(s, aliases)
        own = _own_writes(s, aliases.keys())
        clash = w & written
        same_thread = all(own.get(b) is not None and owners.get(b) == own[b] for b in clash)
        if (r & written) or (w & read) or (clash and not same_thread):
            out.append(ir.Sync())
            read, written, owners = set(), set(), {}
        for b in w:
            owners[b] = own.get(b) if b not in written or owners.get(b) == own.get(b) else None
        if isinstance(s, ir.For):
            body, (br, bw, _) = _block(s.body, aliases, (read, written, owners))
            # The next iteration's first statements meet this iteration's last ones.
            fr, fw = _first_touches(body, aliases)
            if (bw & fr) or (br & fw) or (bw & fw):
                if not (body and isinstance(body[-1], ir.Sync)):
                    body = body + (ir.Sync(),)
                br, bw = set(), set()
            s = replace(s, body=body)
            read |= r
            written |= w
            if body and isinstance(body[-1], ir.Sync):
                read, written, owners = set(), set(), {}
        elif isinstance(s, ir.If):
            then, _ = _block(s.then, aliases, (read, written, owners))
            orelse, _ = _block(s.orelse, aliases, (read, written, owners))
            s = replace(s, then=then, orelse=orelse)
            read |= r
            written |= w
        else:
            read |= r
            written |= w
        out.append(s)
    return tuple(out), (read, written, owners)


def _first_touches(body, aliases) -> tuple[set, set]:
    """What a loop body touches before its first sync: what an iteration's start may race."""
    reads, writes = set(), set()
    for s in body:
        if isinstance(s, ir.Sync):
            break
        r, w = _touches(s, aliases)
        reads |= r
        writes |= w
    return reads, writes
