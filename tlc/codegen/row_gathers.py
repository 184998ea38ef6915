"""Row gathers and scatters, the C: a parallel loop that copies rows of a tensor found by index
arithmetic into a shared tile (an implicit GEMM's im2col tile, an embedding's rows) or a shared
tile's rows out to such rows (an implicit GEMM's output pixels), as schedule/gather_rows.py
recognized them (`row_gather`, `row_scatter`), moved as 16-byte vectors: cp.async into shared
memory, plain 16-byte stores out; a vector at the tensor's edge or unaligned element by element.
A warp-specialized producer's gathers keep each of its rows' parts of the indices in registers
over the K loop (`gather_rows_kept`)."""
from __future__ import annotations

from ..dtypes import I32
from ..ir.walk import statement_exprs, variables
from ..schedule import gather_rows
from .cnames import c_name, c_type, literal


class RowGatherGen:
    """Mixed into `CopyGen`: the row gathers' and scatters' C."""

    def gather_rows_kept(self, g, thread: str, threads: int, loop_var: str) -> dict | None:
        """Before a warp-specialized producer's K loop: each of this thread's rows of gather `g`
        (rows `thread`, `thread + threads`, ... of the tile) its part of each index, of the
        offset and of the bounds, in registers, where the indices split into a row's part and a
        K step's (gather_rows.row_steps: the output pixel's, with its divisions, and the kernel
        position's), so that a K step adds its own part once a row rather than dividing again.
        Returns what gather_async(..., kept=) reads, or None where the indices do not split."""
        rs = gather_rows.row_steps(g, loop_var)
        if rs is None:
            return None
        b = self.buffers[g.dst]
        rows, cols = b.shape
        vec = 16 // b.dtype.itemsize
        vecs, vpr = rows * cols // vec, cols // vec
        rounds = -(-vecs // threads)
        tag = f"tl_g{len(getattr(self, '_kept_tags', ()))}"
        self._kept_tags = (*getattr(self, "_kept_tags", ()), tag)
        dims = self.tensor_dims(g.src)
        i = g.loop.vars[0]
        both = [d for d, (r, st) in enumerate(rs.parts) if r is not None and st is not None]
        e = self.emit
        e(f"// the rows of {g.dst} this thread gathers: their parts of the indices, kept over the K loop")
        for d in both:
            e(f"int {tag}_r{d}[{rounds}];  // index {d}'s row part")
        e(f"long long {tag}_o[{rounds}];  // the row's part of the offset")
        e(f"bool {tag}_in[{rounds}];  // the indices of the row alone inside the tensor")
        e("#pragma unroll")
        e(f"for (int tl_round = 0; tl_round < {rounds}; ++tl_round) {{")
        self.indent += 1
        e(f"const int tl_v = {thread} + tl_round * {threads};")
        if vecs % threads:
            e(f"if (tl_v >= {vecs}) {{ {tag}_in[tl_round] = false; {tag}_o[tl_round] = 0;"
              + "".join(f" {tag}_r{d}[tl_round] = 0;" for d in both) + " continue; }")
        e(f"const int {c_name(i)} = tl_v / {vpr};")
        self.ranges[i] = (0, rows - 1)
        self.block(list(rs.row_lets))
        offset, inside = "0LL", []
        for d, ((r, st), dim) in enumerate(zip(rs.parts, dims)):
            text = self._in(r, I32) if r is not None else None
            if d in both:
                e(f"{tag}_r{d}[tl_round] = {text};")
            elif text is not None:
                inside.append(f"({text}) >= 0 && ({text}) < {self.dim_text(dim)}")
            offset = f"({offset} * {self.dim_text(dim)}{f' + ({text})' if text is not None else ''})"
        e(f"{tag}_o[tl_round] = {offset} * {self.dim_text(dims[-1])};")
        e(f"{tag}_in[tl_round] = {' && '.join(inside) if inside else 'true'};")
        self.ranges.pop(i, None)
        self.indent -= 1
        e("}")
        return {"tag": tag, "parts": rs.parts, "both": both}

    def gather_async(self, g, thread: str = "threadIdx.x", threads: int | None = None, kept: dict | None = None) -> None:
        """A row gather (schedule/gather_rows.py) as 16-byte vectors through cp.async: thread t
        takes vectors t, t + THREADS, ... of the tile; a vector of elements that all lie inside
        the tensor, consecutive from a 16-byte boundary, is one cp.async, one with none inside
        (a padding pixel, a row past the last) a zero-filled one, and any other (a row ending
        inside the vector, an unaligned tensor) is moved element by element.  Where only the
        last index reads j, as `a + j` (`g.simple`), the vector's first element decides; else
        each element's scalars, condition and position are computed and compared.  `thread` and
        `threads`: the gathering threads (a warp-specialized producer's: tl_worker of 128);
        `kept`: its rows' parts kept in registers (gather_rows_kept), the K step's part added."""
        b = self.buffers[g.dst]
        rows, cols = b.shape
        T, vec = c_type(b.dtype), 16 // b.dtype.itemsize
        vecs, threads = rows * cols // vec, threads or self.k.threads
        i, j = g.loop.vars
        src = c_name(g.src)
        zero = literal(0, b.dtype)
        self.emit(f"{{  // gather rows of {g.src} into {g.dst}: 16-byte vectors through cp.async")
        self.indent += 1
        self.emit(f"const bool tl_gv = (reinterpret_cast<unsigned long long>({src}) & 15) == 0;")
        once = gather_rows.tile_invariant(g.lets, g.loop.vars)  # computed once, not once a vector
        self.block([s for s in g.lets if s.name in once])
        lets = tuple(s for s in g.lets if s.name not in once)
        rounds, vpr = -(-vecs // threads), cols // vec
        batched = not g.simple  # element moves' loads all issued before the first is stored
        # A thread's columns are the same in every round where a round is whole rows: the
        # scalars of j alone (im2col's kernel position and channel, divisions by C and K) are
        # then computed once for the thread's `vec` columns, before the rounds, not once a round.
        hoisted = {}
        same_columns = threads % vpr == 0 and not g.simple  # (the simple form keeps its code: no column scalars)
        if same_columns:
            self.emit(f"const int tl_j0_t = {thread} % {vpr} * {vec};")
            hoisted = gather_rows.column_scalars(g, once)
        read = set()  # what the rounds read: the hoisted scalars others are computed from stay in the loop above
        parts = gather_rows.split_indices(g, hoisted, once) if hoisted else None
        dims = self.tensor_dims(g.src)
        if hoisted:
            # the element's scalars left in the rounds: with split indices only those the
            # condition reads (the indices' parts come from the row's and the column's tables)
            rest = [s for s in lets if s.name in g.by_column and s.name not in hoisted]
            exprs = (*(() if parts else g.indices), *((g.cond,) if g.cond is not None else ()))
            read = {v.name for e in exprs for v in variables(e)}
            if parts:
                changed = True
                while changed:  # the scalars those read, through the rest
                    more = {v.name for s in rest if s.name in read for x in statement_exprs(s) for v in variables(x)}
                    changed = not more <= read
                    read |= more
                rest = [s for s in rest if s.name in read]
            else:
                read |= {v.name for s in rest for x in statement_exprs(s) for v in variables(x)}
            for name, (dtype, _) in hoisted.items():
                if name in read:
                    self.emit(f"{c_type(dtype)} tl_h_{c_name(name)}[{vec}];")
            if parts:
                for d, (_, col) in enumerate(parts):
                    if col is not None:
                        self.emit(f"int tl_hc{d}[{vec}];  // index {d}'s column part")
                self.emit(f"long long tl_hco[{vec}];  // the column's part of the element's offset")
                self.emit(f"bool tl_hin[{vec}];  // the indices of the column alone inside the tensor")
            self.ranges[j] = (0, cols - 1)
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_e = 0; tl_e < {vec}; ++tl_e) {{")
            self.indent += 1
            self.emit(f"const int {c_name(j)} = tl_j0_t + tl_e;")
            for name, (dtype, value) in hoisted.items():
                self.emit(f"const {c_type(dtype)} {c_name(name)} = {self._in(value, dtype)};")
            for name in hoisted:
                if name in read:
                    self.emit(f"tl_h_{c_name(name)}[tl_e] = {c_name(name)};")
            if parts:
                offset, inside = self.index_parts(parts, dims, 1, "tl_hc{}[tl_e]", "")
                self.emit(f"tl_hco[tl_e] = {offset};")
                self.emit(f"tl_hin[tl_e] = {' && '.join(inside) if inside else 'true'};")
            self.indent -= 1
            self.emit("}")
            if parts:
                self.emit("bool tl_hseq = true;  // the column's elements consecutive in memory")
                self.emit("#pragma unroll")
                self.emit(f"for (int tl_e = 1; tl_e < {vec}; ++tl_e) tl_hseq = tl_hseq && tl_hco[tl_e] == tl_hco[0] + tl_e;")
            self.ranges.pop(j, None)
        if batched:
            self.emit(f"{T} tl_ev[{rounds}][{vec}];  // the values of vectors moved element by element")
            self.emit(f"{T}* tl_ed[{rounds}];  // and where they go (nullptr: none)")
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_round = 0; tl_round < {rounds}; ++tl_round) tl_ed[tl_round] = nullptr;")
        if kept is not None:  # the K step's part of each index, once for all rows
            tag, dims = kept["tag"], self.tensor_dims(g.src)
            step, inside = "0LL", []
            for d, ((r, st), dim) in enumerate(zip(kept["parts"], dims)):
                if st is not None:
                    self.emit(f"const int {tag}_s{d} = {self._in(st, I32)};")
                    if d not in kept["both"]:
                        inside.append(f"{tag}_s{d} >= 0 && {tag}_s{d} < {self.dim_text(dim)}")
                step = f"({step} * {self.dim_text(dim)}{f' + {tag}_s{d}' if st is not None else ''})"
            self.emit(f"const long long {tag}_so = {step} * {self.dim_text(dims[-1])};")
            self.emit(f"const bool {tag}_sin = {' && '.join(inside) if inside else 'true'};")
            # the last index is `a + j` (a simple gather): a, once
            self.emit(f"long long {tag}_c;  // the last index at j = 0")
            self.emit(f"{{ const int {c_name(j)} = 0; (void){c_name(j)}; {tag}_c = {self.expr(g.indices[-1])}; }}")
            if threads % vpr == 0:  # this thread's vector is at the same columns in every row
                last = self.dim_text(dims[-1])
                self.emit(f"const long long {tag}_cj = {tag}_c + {thread} % {vpr} * {vec};")
                self.emit(f"const bool {tag}_cok = tl_gv && {last} % {vec} == 0 && {tag}_cj >= 0 && {tag}_cj % {vec} == 0 "
                          f"&& {tag}_cj + {vec} <= {last};  // the whole vector inside its rows")
        self.emit("#pragma unroll")  # a constant trip count, so that it unrolls and a row's scalars are hoisted
        self.emit(f"for (int tl_round = 0; tl_round < {rounds}; ++tl_round) {{")
        self.indent += 1
        self.emit(f"const int tl_v = {thread} + tl_round * {threads};")
        if vecs % threads:
            self.emit(f"if (tl_v >= {vecs}) break;")
        self.emit(f"const int {c_name(i)} = tl_v / {vpr};")
        self.emit(f"const int tl_j0 = {'tl_j0_t' if same_columns else f'tl_v % {vpr} * {vec}'};")
        self.ranges[i], self.ranges[j] = (0, rows - 1), (0, cols - 1)
        dst = f"{self.smem_pointer(g.dst)} + {self.smem_index(b, [c_name(i), 'tl_j0'])}"
        if g.simple:
            dims = self.tensor_dims(g.src)
            last = self.dim_text(dims[-1])
            if kept is None:
                self.emit(f"const int {c_name(j)} = tl_j0;")
            if kept is not None:  # the row's parts from registers, the K step's added
                tag = kept["tag"]
                inside = [f"{tag}_in[tl_round]", f"{tag}_sin"]
                for d in kept["both"]:
                    x = f"({tag}_r{d}[tl_round] + {tag}_s{d})"
                    inside.append(f"{x} >= 0 && {x} < {self.dim_text(dims[d])}")
                self.emit(f"const bool tl_in = {' && '.join(inside)};")
                self.emit(f"const long long tl_c = {tag}_c + tl_j0;")
                self.emit(f"const {T}* tl_row = {src} + {tag}_o[tl_round] + {tag}_so;")
            else:
                self.block(lets)
                row = self.row_of(g.indices, dims, g.cond)
                self.emit(f"const {T}* tl_row = {src} + {row} * {last};")
            self.emit(f"{T}* tl_dst = {dst};")
            if kept is not None and threads % vpr == 0:
                self.emit(f"if ({kept['tag']}_cok && tl_in) tl::cp_async_16_full(tl_dst, tl_row + tl_c);")
            else:
                self.emit(f"if (tl_gv && {last} % {vec} == 0 && tl_in && tl_c >= 0 && tl_c % {vec} == 0 && "
                          f"tl_c + {vec} <= {last}) tl::cp_async_16_full(tl_dst, tl_row + tl_c);")
            self.emit(f"else if (!tl_in || tl_c >= {last} || tl_c + {vec} <= 0) tl::cp_async_16(tl_dst, {src}, 0);")
            self.emit("else {  // a vector at the tensor's edge, or unaligned: element by element (rare, kept small)")
            self.emit("#pragma unroll 1")
            self.emit(f"  for (int tl_e = 0; tl_e < {vec}; ++tl_e) tl_dst[tl_e] = "
                      f"(tl_c + tl_e >= 0 && tl_c + tl_e < {last}) ? tl_row[tl_c + tl_e] : {zero};")
            self.emit("}")
        else:
            per_column = g.by_column
            self.block([s for s in lets if s.name not in per_column])
            if parts:  # the row's parts of the indices and of the offset, once
                offset, inside = self.index_parts(parts, dims, 0, "tl_rr{}", "const int ")
                self.emit(f"const long long tl_ro = {offset};")
                self.emit(f"const bool tl_rin = {' && '.join(inside) if inside else 'true'};")
            self.emit(f"bool tl_ok[{vec}];")
            self.emit(f"long long tl_off[{vec}];")
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_e = 0; tl_e < {vec}; ++tl_e) {{")
            self.indent += 1
            if not hoisted or j in read:
                self.emit(f"const int {c_name(j)} = tl_j0 + tl_e;")
            for name, (dtype, _) in hoisted.items():
                if name in read:  # the rest were only steps on the way
                    self.emit(f"const {c_type(dtype)} {c_name(name)} = tl_h_{c_name(name)}[tl_e];")
            self.block(rest if hoisted else [s for s in lets if s.name in per_column])
            check = [f"({self.expr(g.cond)})"] if g.cond is not None else []
            if parts:
                check.append("tl_rin && tl_hin[tl_e]")
                for d, ((row, col), dim) in enumerate(zip(parts, dims)):
                    if row is not None and col is not None:
                        x = f"(tl_rr{d} + tl_hc{d}[tl_e])"
                        check.append(f"{x} >= 0 && {x} < {self.dim_text(dim)}")
                self.emit(f"tl_ok[tl_e] = {' && '.join(check)};")
                self.emit("tl_off[tl_e] = tl_ro + tl_hco[tl_e];")
            else:
                bounds = self.bounds(g.src, g.indices)
                check += [f"({bounds})"] if bounds else []
                self.emit(f"tl_ok[tl_e] = {' && '.join(check) if check else 'true'};")
                self.emit(f"tl_off[tl_e] = {self.global_offset(g.src, g.indices)};")
            self.indent -= 1
            self.emit("}")
            self.emit(f"bool tl_all = {'tl_hseq' if parts else 'true'}, tl_any = false;")
            self.emit("#pragma unroll")
            seq = "" if parts else " && tl_off[tl_e] == tl_off[0] + tl_e"
            self.emit(f"for (int tl_e = 0; tl_e < {vec}; ++tl_e) {{ tl_all = tl_all && tl_ok[tl_e]{seq}; "
                      "tl_any = tl_any || tl_ok[tl_e]; }")
            self.emit(f"{T}* tl_dst = {dst};")
            self.emit(f"if (tl_gv && tl_all && tl_off[0] % {vec} == 0) tl::cp_async_16_full(tl_dst, {src} + tl_off[0]);")
            self.emit(f"else if (!tl_any) tl::cp_async_16(tl_dst, {src}, 0);")
            # some elements outside the tensor, or not consecutive (im2col's columns over C = 3
            # channels: every vector of a row): element by element, loaded here and stored after
            # the last round, so that the loads of all rounds are in flight together
            self.emit("else {  // element by element: loaded now, stored below")
            self.emit("  tl_ed[tl_round] = tl_dst;")
            self.emit("#pragma unroll")
            self.emit(f"  for (int tl_e = 0; tl_e < {vec}; ++tl_e) tl_ev[tl_round][tl_e] = "
                      f"tl_ok[tl_e] ? {src}[tl_off[tl_e]] : {zero};")
            self.emit("}")
        self.ranges.pop(i, None)
        self.ranges.pop(j, None)
        self.indent -= 1
        self.emit("}")
        if batched:
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_round = 0; tl_round < {rounds}; ++tl_round)")
            self.emit("  if (tl_ed[tl_round] != nullptr) {")
            self.emit("#pragma unroll")
            self.emit(f"    for (int tl_e = 0; tl_e < {vec}; ++tl_e) tl_ed[tl_round][tl_e] = tl_ev[tl_round][tl_e];")
            self.emit("  }")
        self.indent -= 1
        self.emit("}")

    def row_of(self, indices, dims, cond=None) -> str:
        """A row gather's or scatter's vector: emits `tl_in` (its lead indices inside the tensor,
        and `cond`) and `tl_c` (its last index); returns the row's index among the tensor's rows
        (its offset over the last dimension's size)."""
        lead, col = indices[:-1], self.expr(indices[-1])
        inside = [f"{self.expr(x)} >= 0 && {self.expr(x)} < {self.dim_text(d)}" for x, d in zip(lead, dims)]
        if cond is not None:
            inside.append(f"({self.expr(cond)})")
        self.emit(f"const bool tl_in = {' && '.join(inside) if inside else 'true'};")
        self.emit(f"const long long tl_c = {col};")
        row = "0LL"
        for x, d in zip(lead, dims):
            row = f"({row} * {self.dim_text(d)} + {self.expr(x)})"
        return row

    def index_parts(self, parts, dims, side: int, var: str, decl: str) -> tuple[str, list]:
        """The row's (`side` 0) or the column's (1) parts of a split gather's indices
        (gather_rows.split_indices), each set as `var` of its dimension (declared with `decl`):
        the offset they make in the tensor (0 for a part that is absent) and the bounds of the
        indices that this side alone holds."""
        offset, inside = "0LL", []
        for d, (pair, dim) in enumerate(zip(parts, dims)):
            part, name = pair[side], var.format(d)
            if part is not None:
                self.emit(f"{decl}{name} = {self._in(part, I32)};")
                if pair[1 - side] is None:
                    inside.append(f"{name} >= 0 && {name} < {self.dim_text(dim)}")
            offset = f"({offset} * {self.dim_text(dim)}{f' + {name}' if part is not None else ''})"
        return offset, inside

    def scatter_rows(self, g) -> None:
        """A row scatter (schedule/gather_rows.py `row_scatter`): thread t takes 16-byte vectors
        t, t + THREADS, ... of the shared tile; a vector whose row lies inside the tensor and
        starts on a 16-byte boundary is one 16-byte store, any other is stored element by
        element where inside the tensor."""
        b = self.buffers[g.src]
        rows, cols = b.shape
        T, vec = c_type(b.dtype), 16 // b.dtype.itemsize
        i, j = g.loop.vars
        dst, dims = c_name(g.dst), self.tensor_dims(g.dst)
        last = self.dim_text(dims[-1])
        self.emit(f"{{  // scatter rows of {g.src} into {g.dst}: 16-byte vectors")
        self.indent += 1
        self.emit(f"const bool tl_sv = (reinterpret_cast<unsigned long long>({dst}) & 15) == 0 && {last} % {vec} == 0;")
        once = gather_rows.tile_invariant(g.lets, g.loop.vars)  # computed once, not once a vector
        self.block([s for s in g.lets if s.name in once])
        lets = tuple(s for s in g.lets if s.name not in once)
        vecs, threads = rows * cols // vec, self.k.threads
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_round = 0; tl_round < {-(-vecs // threads)}; ++tl_round) {{")
        self.indent += 1
        self.emit(f"const int tl_v = threadIdx.x + tl_round * {threads};")
        if vecs % threads:
            self.emit(f"if (tl_v >= {vecs}) break;")
        self.emit(f"const int {c_name(i)} = tl_v / {cols // vec};")
        self.emit(f"const int {c_name(j)} = tl_v % {cols // vec} * {vec};")
        self.ranges[i], self.ranges[j] = (0, rows - 1), (0, cols - vec)
        self.block(lets)
        row = self.row_of(g.indices, dims)
        self.emit(f"{T}* tl_row = {dst} + {row} * {last};")
        self.emit(f"const {T}* tl_src = {self.smem_pointer(g.src)} + {self.smem_index(b, [c_name(i), c_name(j)])};")
        self.emit(f"if (tl_in && tl_sv && tl_c >= 0 && tl_c % {vec} == 0 && tl_c + {vec} <= {last}) "
                  "*reinterpret_cast<uint4*>(tl_row + tl_c) = *reinterpret_cast<const uint4*>(tl_src);")
        self.emit("else if (tl_in) {  // a vector at the tensor's edge, or unaligned: element by element")
        self.emit("#pragma unroll 1")
        self.emit(f"  for (int tl_e = 0; tl_e < {vec}; ++tl_e) "
                  f"if (tl_c + tl_e >= 0 && tl_c + tl_e < {last}) tl_row[tl_c + tl_e] = tl_src[tl_e];")
        self.emit("}")
        self.ranges.pop(i, None)
        self.ranges.pop(j, None)
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")
