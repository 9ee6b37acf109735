"""README.md's Python worker, run as written, on a spool of its own."""

import os
import textwrap

import spool

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def block(heading):
    """The first indented block after HEADING, as code."""
    lines = open(README).read().split("\n")
    i = lines.index(heading) + 1
    while not lines[i].startswith("    "):
        i += 1
    out = []
    while i < len(lines) and (lines[i].startswith("    ") or not lines[i]):
        out.append(lines[i])
        i += 1
    return textwrap.dedent("\n".join(out))


def test_the_python_worker_runs_as_written(tmp_path):
    code = block("## A worker in Python")
    assert len(code.strip().split("\n")) <= 10
    path = str(tmp_path / "invoices")
    spool.init(path)
    sent = []

    def send_invoice(payload, key, fence):
        sent.append((payload, key, fence))
    exec(code.replace("/var/spool/invoices", path),
         {"send_invoice": send_invoice})
    assert sent == [(b"order-1842", "order-1842", 1)]
    assert os.listdir(os.path.join(path, "done")) == ["order-1842"]
