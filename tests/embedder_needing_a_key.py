"""An embedder module as docs/embeddings.md's hosted-API example, in a process that does
not have its key: importing it raises (KeyError)."""

import os

API_KEY = os.environ["MEMADMIN_TEST_EMBEDDING_KEY_NEVER_SET"]


def embed(texts):
    return [[1.0] for _ in texts]
