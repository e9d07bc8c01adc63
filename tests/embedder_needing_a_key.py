"""An embedder module as docs/embeddings.md's hosted-API example, in a process that does
not have its key: importing it raises (KeyError)."""

import os

from tests import embedders

embedders.IMPORTS.append(__name__)  # before the failure: how often it was imported
API_KEY = os.environ["MEMADMIN_TEST_EMBEDDING_KEY_NEVER_SET"]


def embed(texts):
    return [[1.0] for _ in texts]
