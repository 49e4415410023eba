"""Embeddings from the OpenAI-compatible ``/v1/embeddings`` endpoint ``knowledge.embeddings``
names, through the official ``openai`` client.

The endpoint is the operator's (like a model's ``base_url``), not a URL a user typed, so it is
not put through the SSRF guard; a loopback or intranet embedding server is the normal case.
Vectors are unit-normalised float32, so a dot product is their cosine similarity.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from harness.config.app_config import KnowledgeEmbeddingsConfig


class EmbeddingError(RuntimeError):
    pass


def embeddings_enabled(cfg: KnowledgeEmbeddingsConfig) -> bool:
    return bool(cfg.model)


def _normalised(vector: Sequence[float]) -> list[float]:
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


def to_blob(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def from_blob(blob: bytes) -> array:
    values = array("f")
    values.frombytes(bytes(blob))
    return values


_embedders: dict[str, Embedder] = {}


def embedder_for(cfg: KnowledgeEmbeddingsConfig) -> Embedder:
    """One client per configuration: a search embeds its query, and a new client each time
    would open a new connection pool each time."""
    key = cfg.model_dump_json()
    found = _embedders.get(key)
    if found is None:
        found = _embedders[key] = Embedder(cfg)
    return found


class Embedder:
    def __init__(self, cfg: KnowledgeEmbeddingsConfig) -> None:
        from openai import (
            OpenAI,  # the SDK costs a second to import; only embedding servers pay it
        )

        if not cfg.model:
            raise EmbeddingError("knowledge.embeddings.model is not set")
        self.cfg = cfg
        self.client = OpenAI(api_key=cfg.api_key or "unused", base_url=cfg.base_url, timeout=cfg.timeout_seconds, max_retries=2)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, in batches of ``batch_size``."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.cfg.batch_size):
            batch = [t[:8000] or " " for t in texts[start:start + self.cfg.batch_size]]
            extra = {"dimensions": self.cfg.dimensions} if self.cfg.dimensions else {}
            try:
                answer = self.client.embeddings.create(model=self.cfg.model, input=batch, **extra)
            except Exception as exc:  # the SDK's errors: say what failed, not its stack
                raise EmbeddingError(f"the embeddings endpoint failed: {type(exc).__name__}: {exc}") from None
            rows = sorted(answer.data, key=lambda d: d.index)
            if len(rows) != len(batch):
                raise EmbeddingError(f"the embeddings endpoint answered {len(rows)} vectors for {len(batch)} texts")
            vectors.extend(_normalised(r.embedding) for r in rows)
        return vectors
