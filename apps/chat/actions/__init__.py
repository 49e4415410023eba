"""Thread actions that rewind or rewrite checkpoints: regenerate, edit and rerun, branch,
and the journal visibility rules they imply (docs/thread-actions.md)."""
