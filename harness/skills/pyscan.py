"""What a skill's Python code can do, read from its syntax tree (never by running it).

Every ``.py`` file of a package (and a script whose first line names python) is parsed with
``ast`` and walked once. Names are resolved through the file's imports, so ``import requests
as r; r.get(...)`` and ``from os import environ`` are seen for what they are. The rules:

| rule | severity | what it means |
|---|---|---|
| ``python.network`` | warning | imports or calls a network client (socket, urllib, requests, httpx, aiohttp, ...) |
| ``python.subprocess`` | warning | starts a program with a fixed argument list |
| ``python.env_read`` | warning | reads the process environment (``os.environ``, ``getenv``) |
| ``python.unsafe_deserialization`` | warning | ``pickle.load``/``yaml.load``: data that can carry code |
| ``python.encoded_blob`` | warning | a long base64/hex literal (an embedded payload looks like this) |
| ``python.shell_exec`` | high | ``os.system``/``os.popen``/``shell=True``: a string handed to a shell |
| ``python.dynamic_exec`` | high | ``exec``/``eval``/``compile(..., 'exec')`` of code that is not a literal |
| ``python.dynamic_import`` | high | ``__import__``/``importlib.import_module`` of a computed name |
| ``python.obfuscated_exec`` | high | decoded bytes (base64, hex, zlib, codecs, marshal) run as code |
| ``python.marshal`` | high | ``marshal.loads``: code objects from bytes, unreadable in review |
| ``python.env_exfil`` | high | the environment is read and a network client is used in one file |

*high* is what keeps a skill the agent wrote switched off until a person has looked
(docs/skills.md); *warning* is shown so a reviewer knows what the code reaches for. A file
that does not parse is reported as ``python.syntax`` (warning): code the reviewer cannot read
is itself worth a look.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

HIGH, WARNING = "high", "warning"
MAX_SOURCE_BYTES = 1024 * 1024  # larger files are not parsed (the archive caps members anyway)
BLOB_CHARS = 512  # a base64/hex literal this long is a payload, not a constant someone typed

_NETWORK_MODULES = ("socket", "urllib.request", "urllib3", "requests", "httpx", "aiohttp", "http.client",
                    "ftplib", "smtplib", "telnetlib", "paramiko", "websocket", "websockets", "pycurl")
_SUBPROCESS_CALLS = {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                     "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.execv",
                     "os.execve", "os.execvp", "os.execl", "os.execlp", "os.spawnv", "os.spawnl", "os.posix_spawn",
                     "asyncio.create_subprocess_exec", "pty.spawn"}
_SHELL_CALLS = {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
                "asyncio.create_subprocess_shell", "commands.getoutput"}
_ENV_NAMES = {"os.environ", "os.getenv", "os.environb", "os.getenvb", "os.environ.get", "os.environ.copy",
              "os.environ.items"}
_DECODERS = {"base64.b64decode", "base64.b32decode", "base64.b16decode", "base64.a85decode", "base64.b85decode",
             "base64.decodebytes", "base64.urlsafe_b64decode", "binascii.unhexlify", "binascii.a2b_base64",
             "bytes.fromhex", "codecs.decode", "zlib.decompress", "gzip.decompress", "bz2.decompress",
             "lzma.decompress", "marshal.loads"}
_EXECUTORS = {"exec", "eval", "compile", "builtins.exec", "builtins.eval"}
_BLOB = re.compile(r"^(?:[A-Za-z0-9+/=\s]+|[0-9a-fA-F\s]+)$")


@dataclass(frozen=True)
class CodeFinding:
    rule: str
    severity: str
    line: int | None
    message: str


def is_python(name: str, head: bytes) -> bool:
    if name.lower().endswith(".py"):
        return True
    first = head[:200].split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted name it stands for, from every import in the file."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str:
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base else ""
    if isinstance(node, ast.Call):  # bytes.fromhex(...).decode() -> the inner call's name
        return _dotted(node.func, aliases)
    return ""


def _is_network(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in _NETWORK_MODULES)


def _shell_true(call: ast.Call) -> bool:
    for kw in call.keywords:
        if kw.arg is None:  # **kwargs: whether it carries shell=True cannot be known
            return True
        if kw.arg == "shell":
            return not (isinstance(kw.value, ast.Constant) and kw.value.value is False)
    return False


def _decoded_inside(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The decoder whose output feeds this expression, if any (``exec(b64decode(x))``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = _dotted(sub.func, aliases)
            if name in _DECODERS or name.endswith(".fromhex") or name.endswith("b64decode"):
                return name
    return None


def scan_python(source: bytes | str) -> list[CodeFinding]:
    """Findings for one file's source. Pure: parses, never imports or runs anything."""
    if isinstance(source, bytes):
        if len(source) > MAX_SOURCE_BYTES:
            return [CodeFinding("python.syntax", WARNING, None, f"larger than {MAX_SOURCE_BYTES // 1024} KB; not analysed")]
        source = source.decode("utf-8", errors="replace")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        return [CodeFinding("python.syntax", WARNING, line, "does not parse as Python, so it could not be checked")]
    aliases = _aliases(tree)
    found: list[CodeFinding] = []
    seen: set[tuple[str, int | None]] = set()
    env_line = net_line = None

    def add(rule: str, severity: str, node: ast.AST | None, message: str) -> None:
        line = getattr(node, "lineno", None)
        if (rule, line) not in seen:
            seen.add((rule, line))
            found.append(CodeFinding(rule, severity, line, message))

    try:
        nodes = list(ast.walk(tree))
    except RecursionError:
        return [CodeFinding("python.syntax", WARNING, None, "nested too deeply to analyse")]
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if _is_network(module):
                    add("python.network", WARNING, node, f"imports {module}, a network client")
                    net_line = net_line or node
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(getattr(node, "ctx", None), ast.Load):
            name = _dotted(node, aliases)
            if name in ("os.environ", "os.environb"):
                add("python.env_read", WARNING, node, "reads the process environment (os.environ)")
                env_line = env_line or node
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) >= BLOB_CHARS:
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if _BLOB.match(text) and len(set(text)) > 8:
                add("python.encoded_blob", WARNING, node, f"a {len(text)}-character encoded literal (an embedded payload?)")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func, aliases)
        if name in _EXECUTORS:
            short = name.rsplit(".", 1)[-1]
            arg = node.args[0] if node.args else None
            decoder = _decoded_inside(arg, aliases) if arg is not None else None
            if decoder:
                add("python.obfuscated_exec", HIGH, node, f"runs decoded bytes as code: {short}({decoder}(...))")
            elif not isinstance(arg, ast.Constant):  # literal code is as readable as the file itself
                add("python.dynamic_exec", HIGH, node, f"{short}() of code that is not a literal in the file")
        elif name == "marshal.loads" or name == "marshal.load":
            add("python.marshal", HIGH, node, "loads a code object from bytes (marshal)")
        elif name in ("__import__", "importlib.import_module", "builtins.__import__"):
            if not node.args or not isinstance(node.args[0], ast.Constant):
                add("python.dynamic_import", HIGH, node, f"{name}() of a computed module name")
            elif isinstance(node.args[0].value, str) and _is_network(node.args[0].value):
                add("python.network", WARNING, node, f"imports {node.args[0].value}, a network client")
                net_line = net_line or node
        elif name in _SHELL_CALLS or (name.startswith(("subprocess.", "asyncio.create_subprocess")) and _shell_true(node)):
            add("python.shell_exec", HIGH, node, f"{name}() hands a string to a shell")
        elif name in _SUBPROCESS_CALLS:
            add("python.subprocess", WARNING, node, f"starts a program: {name}()")
        elif name in ("os.getenv", "os.getenvb", "os.environ.get"):
            add("python.env_read", WARNING, node, f"reads an environment variable ({name})")
            env_line = env_line or node
        elif name in ("pickle.load", "pickle.loads", "dill.loads", "shelve.open") or (
                name == "yaml.load" and not any(k.arg == "Loader" and "Safe" in _dotted(k.value, aliases) for k in node.keywords)):
            add("python.unsafe_deserialization", WARNING, node, f"{name}() can run code hidden in the data")
        if _is_network(name):
            net_line = net_line or node
    if env_line is not None and net_line is not None:
        add("python.env_exfil", HIGH, env_line,
            f"reads the environment and uses a network client (line {getattr(net_line, 'lineno', '?')}) in the same file")
    return found
