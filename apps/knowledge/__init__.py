"""Knowledge bases: collections of documents the agent searches and cites (docs/knowledge.md)."""
