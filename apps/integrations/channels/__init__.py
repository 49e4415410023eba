"""IM channels: platform adapters behind one interface, and the manager that runs them.

``base`` is the contract every adapter keeps; ``registry`` maps provider names to adapter
classes. Adapters only translate between a platform and plain messages: who may talk, which
thread a chat maps to and how a run is started are the manager's business, so every platform
gets the same rules.
"""
