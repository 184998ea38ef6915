"""`tlc profile --ncu --source`: Nsight Compute's warp stall samples per `.tl` line.

How the samples reach the `.tl` lines:
- The run under Nsight Compute compiles with TLC_LINEINFO=1: NVRTC's `-lineinfo`, with every
  line of a kernel's code under the `#line` of the `.tl` statement it comes from
  (runtime.compile.pin_line_directives), so the machine code of a statement is charged to its
  `.tl` line and not to the lines below it.
- Nsight Compute's source page (`ncu --page source --print-source cuda,sass --csv`, the
  SourceCounters section's sampling) charges each SASS instruction's samples to the line its
  line table names: the `.tl` line for a statement's own code, a line of the `.cu` for code of
  the tl:: templates inlined into it (the `.cu` carries them).
- Those `.cu` lines are charged to the `.tl` lines that inline them, from the same source's PTX
  (its `.loc ... inlined_at` records, followed to the outermost call; `inline_sites`).  A
  template line inlined by one statement goes to that statement; one that several share goes
  to the candidate whose own instruction comes last before it in the machine code.  Samples
  that reach no `.tl` line (the kernel's prologue, an unknown file) are counted apart.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import field
from pathlib import PurePosixPath

from ..frozen import frozen, record

STALL_COLUMN = "Warp Stall Sampling (All Samples)"


@frozen
class Instruction:
    """One SASS instruction of ncu's source page: its address, the line it is charged to."""
    address: int
    file: str
    line: int
    samples: float


@record
class LineSamples:
    """The samples of one `.tl` line: its own code's and the inlined templates'."""
    file: str
    line: int
    own: float = 0.0
    inlined: float = 0.0

    @property
    def total(self) -> float:
        return self.own + self.inlined


@record
class SourceView:
    """Samples per `.tl` line (`lines`, in file and line order) and those of no `.tl` line."""
    lines: list[LineSamples] = field(default_factory=list)
    elsewhere: float = 0.0
    total: float = 0.0


# ---- Nsight Compute's source page -----------------------------------------------------------

def parse_ncu_source(text: str) -> list[Instruction]:
    """The SASS rows of `ncu --page source --print-source cuda,sass --csv`: per source file a
    row ("File Path", path), a row ("Function Name", name), a header ("Line No", "Source",
    "Address", "Source", metrics...), then each source line's row (its number, its text, "-"
    for an address, its instructions' sums) followed by a row per instruction (an address, its
    SASS).  Lines of the profiled program's own output and ncu's ==PROF== lines around it are
    skipped; a metric's "-" or "1,234" reads as 0 or 1234."""
    out, path, header, line = [], None, None, None
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].startswith("=="):
            continue
        if row[0] == "File Path":
            path, header, line = (row[1] if len(row) > 1 else ""), None, None
        elif row[0] == "Line No" and "Address" in row:
            header = {name: i for i, name in reversed(list(enumerate(row)))}  # the first of a repeated name
        elif header is not None and path is not None:
            number, address = _cell(row, header, "Line No"), _cell(row, header, "Address")
            if number.isdigit():  # a source line's row (its address "-"), or an instruction's that repeats it
                line = int(number)
            if address.lower().startswith("0x") and line is not None:
                out.append(Instruction(int(address, 16), path, line, _number(_cell(row, header, STALL_COLUMN))))
    return out


def _cell(row: list, header: dict, name: str) -> str:
    i = header.get(name)
    return row[i].strip() if i is not None and i < len(row) else ""


def _number(text: str) -> float:
    try:
        return float(text.replace(",", "")) if text not in ("", "-") else 0.0
    except ValueError:
        return 0.0


# ---- the PTX's inlining records ---------------------------------------------------------------

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:,\s*function_name\s+\S+,\s*inlined_at\s+(\d+)\s+(\d+)\s+\d+)?", re.M)


def inline_sites(ptx: str) -> dict:
    """(file, line) of each line of inlined code in `ptx` (NVRTC's or nvcc's, with -lineinfo)
    -> the set of (file, line) of `.tl` code that inlines it, following nested inlining out
    to the `.tl` call sites."""
    files = dict(_FILE.findall(ptx))
    calls: dict = {}
    for f, ln, at_f, at_ln in _LOC.findall(ptx):
        if at_f:
            calls.setdefault((files.get(f, f), int(ln)), set()).add((files.get(at_f, at_f), int(at_ln)))

    def outermost(site, seen):
        if _is_tl(site[0]):
            return {site}
        if site in seen:
            return set()
        found = set()
        for caller in calls.get(site, ()):
            found |= outermost(caller, seen | {site})
        return found

    return {site: outermost(site, frozenset()) for site in calls if not _is_tl(site[0])}


# ---- samples to .tl lines -----------------------------------------------------------------------

def source_view(instructions: list[Instruction], sites: dict) -> SourceView:
    """Each instruction's samples charged to a `.tl` line (see the module's docstring)."""
    view = SourceView(total=sum(i.samples for i in instructions))
    tl_files = sorted({i.file for i in instructions if _is_tl(i.file)})
    lines: dict = {}
    last_seen: dict = {}  # (.tl file, line) -> the address of its last own instruction so far
    for ins in sorted(instructions, key=lambda i: i.address):
        if _is_tl(ins.file):
            last_seen[(ins.file, ins.line)] = ins.address
            _entry(lines, (ins.file, ins.line)).own += ins.samples
            continue
        candidates = {(_spelled(f, tl_files), ln) for f, ln in _sites_of(sites, ins.file, ins.line)}
        if not candidates:
            view.elsewhere += ins.samples
            continue
        target = max(sorted(candidates), key=lambda c: last_seen.get(c, -1))
        _entry(lines, target).inlined += ins.samples
    view.lines = [lines[k] for k in sorted(lines)]
    return view


def _spelled(file: str, known: list) -> str:
    """`file` as ncu spells it, where ncu names a file that is the same one."""
    return next((k for k in known if _same_file(k, file)), file)


def _entry(lines: dict, site) -> LineSamples:
    if site not in lines:
        lines[site] = LineSamples(site[0], site[1])
    return lines[site]


def _sites_of(sites: dict, file: str, line: int) -> set:
    """The `.tl` call sites of (file, line), the files named as ncu and the PTX name them (a
    path and a bare name, or two spellings of one path)."""
    for (f, ln), found in sites.items():
        if ln == line and _same_file(f, file):
            return found
    return set()


def _same_file(a: str, b: str) -> bool:
    pa, pb = PurePosixPath(a.replace("\\", "/")), PurePosixPath(b.replace("\\", "/"))
    if pa == pb:
        return True
    shorter, longer = sorted((pa.parts, pb.parts), key=len)
    return len(shorter) > 0 and longer[-len(shorter):] == shorter


def _is_tl(file: str) -> bool:
    return file.endswith(".tl")


# ---- the text -------------------------------------------------------------------------------------

def format_source_view(view: SourceView, read=None) -> list[str]:
    """The report's lines: per `.tl` file, its lines from the first with samples to the last,
    each with its samples and share (the inlined templates' part in parentheses); `read(file)`
    gives a file's text (default: from disk; a file it cannot read shows no text)."""
    read = read or _read
    out = [f"  source view: {view.total:.0f} warp stall samples (Nsight Compute), by .tl line; "
           "(...): of tl:: template code inlined there"]
    if not view.total:
        return out + ["    no samples: is the kernel too short for Nsight Compute's sampling interval?"]
    by_file: dict = {}
    for ls in view.lines:
        by_file.setdefault(ls.file, {})[ls.line] = ls
    for file, lines in by_file.items():
        text = read(file)
        source = text.split("\n") if text is not None else []
        out.append(f"    {file}")
        for n in range(min(lines), max(lines) + 1):
            code = source[n - 1].rstrip() if 0 < n <= len(source) else ""
            ls = lines.get(n)
            if ls is None or not ls.total:
                out.append(f"    {'':>9} {'':>6} {'':>10} {n:>5}  {code}".rstrip())
                continue
            inlined = f"({ls.inlined:.0f})" if ls.inlined else ""
            out.append(f"    {ls.total:>9.0f} {100 * ls.total / view.total:>5.1f}% {inlined:>10} {n:>5}  {code}".rstrip())
    if view.elsewhere:
        out.append(f"    {view.elsewhere:>9.0f} {100 * view.elsewhere / view.total:>5.1f}%  on no .tl line "
                   "(the kernel's prologue, code the line table does not place)")
    return out


def _read(file: str):
    try:
        with open(file, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None
