"""Platform adapters, one module per platform, behind the contract in ``apps.channels.base``.

``apps.channels.registry`` maps provider names to these modules and imports them on demand, so
a platform whose SDK is missing is skipped, not a crash. Adapters only translate between a
platform and plain messages: who may talk, which thread a chat maps to and how a run is started
are the manager's business (``apps.channels.manager``), so every platform gets the same rules.
"""
