"""`tlc lsp`: a language server for `.tl` files (LSP over stdin/stdout, on pygls).

Thin by design: `analysis.py` answers the editor's questions with the driver's and the type
checker's own results (the diagnostics of `tlc check`, the typed AST's types, the loader's
modules and spans) and holds no compiler logic; `server.py` wires those answers to LSP
messages and converts positions.  pygls is an optional dependency (`pip install 'tlc[lsp]'`),
imported only by `server.py`.
"""
