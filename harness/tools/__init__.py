"""Tools for the lead agent: sandbox tools, built-ins, and (in ``registry``) assembly."""
