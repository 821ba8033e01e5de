"""ddpguard-lsp: the Python checker (``ddpguard FILE.py``) as a language
server. It runs the ``ddpguard`` executable on each open Python document and
publishes its findings as diagnostics, with the broadcast fix as a quick fix
(docs/python-checker.md, "In the editor"). Needs pygls (``pip install
ddpguard[lsp]``)."""

__version__ = "0.1.0"
