"""Pure pieces: path mapping, command translation, env policy, output bounds, globs."""

from __future__ import annotations

import pytest

from harness.sandbox.env_policy import MASK, build_sandbox_env, is_secret_name, mask_secrets, scrub_environment
from harness.sandbox.errors import SandboxPathError
from harness.sandbox.output import OutputCapture, bound_text
from harness.sandbox.paths import VirtualFS, check_id
from harness.sandbox.search import compile_glob, expand_braces


@pytest.fixture
def fs(tmp_path):
    data = tmp_path / "u" / "user-data"
    for name in ("workspace", "uploads", "outputs"):
        (data / name).mkdir(parents=True)
    skills = tmp_path / "skills"
    skills.mkdir()
    return VirtualFS(data, skills)


def test_resolve_maps_each_root(fs, tmp_path):
    data = (tmp_path / "u" / "user-data").resolve()
    assert fs.resolve("/mnt/user-data/workspace/a.txt").real == data / "workspace" / "a.txt"
    assert fs.resolve("/mnt/user-data/uploads").real == data / "uploads"
    assert fs.resolve("/mnt/user-data/outputs//x/../y.md").virtual == "/mnt/user-data/outputs/y.md"
    assert fs.resolve("notes/a.md").virtual == "/mnt/user-data/workspace/notes/a.md"
    assert fs.resolve("/mnt/skills/public").real == (tmp_path / "skills").resolve() / "public"
    # Moving between this thread's own directories is allowed.
    assert fs.resolve("/mnt/user-data/workspace/../outputs/r.md").virtual == "/mnt/user-data/outputs/r.md"


@pytest.mark.parametrize("path, message", [
    ("/etc/passwd", "outside the sandbox"),
    ("/mnt/user-data/workspace/../../../etc/passwd", "outside the sandbox"),
    ("/mnt/user-database/x", "outside the sandbox"),
    ("/mnt/skills-other/x", "outside the sandbox"),
    ("a\x00b", "NUL"),
    ("x/" + "y" * 256, "longer than 255"),
    ("/" + "a/" * 2100, "longer than 4096"),
    ("   ", "empty"),
    ("~/x", "'~'"),
])
def test_resolve_refuses(fs, path, message):
    with pytest.raises(SandboxPathError, match=message):
        fs.resolve(path)


def test_write_rules(fs):
    with pytest.raises(SandboxPathError, match="read-only"):
        fs.resolve("/mnt/skills/x", write=True)
    with pytest.raises(SandboxPathError, match="Write under"):
        fs.resolve("/mnt/user-data/top.txt", write=True)
    with pytest.raises(SandboxPathError, match="directory"):
        fs.resolve("/mnt/user-data/outputs", write=True)
    assert fs.resolve("/mnt/user-data/uploads/new.csv", write=True).virtual == "/mnt/user-data/uploads/new.csv"


def test_command_translation_round_trip(fs):
    ws = str(fs.host_dir("workspace"))
    cmd = "cat /mnt/user-data/workspace/a.txt > /mnt/user-data/outputs/b.txt; ls /mnt/skills; cd /mnt/user-data"
    translated = fs.translate_command(cmd)
    assert "/mnt/" not in translated
    assert f"{ws}/a.txt" in translated
    assert fs.untranslate_output(translated) == cmd
    # Look-alikes are left alone.
    assert fs.translate_command("echo /mnt/user-database /mnt/skillset x/mnt/skills") == (
        "echo /mnt/user-database /mnt/skillset x/mnt/skills"
    )
    assert fs.translate_command("VAR=/mnt/user-data/uploads/f") == f"VAR={fs.host_dir('uploads')}/f"


def test_check_id():
    assert check_id("thread id", "abc-DEF_1") == "abc-DEF_1"
    assert check_id("user id", 42) == "42"
    for bad in ("../x", "a/b", "", "x" * 65, "a:b"):
        with pytest.raises(ValueError):
            check_id("thread id", bad)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PGPASSWORD", "MYSQL_PWD",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "SENTRY_DSN", "DATABASE_URL", "REDIS_URL",
                                  "CELERY_BROKER_URL", "DJANGO_SECRET_KEY", "REDISCLI_AUTH", "GH_PAT", "PGPASSFILE"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "PWD", "VIRTUAL_ENV", "PYTHONUNBUFFERED"])
def test_ordinary_names(name):
    assert not is_secret_name(name)


def test_scrub_drops_credentials_in_values_and_layers_injected_env():
    env = scrub_environment({"PATH": "/bin", "UPSTREAM": "https://user:pw@host/", "PLAIN": "https://host/", "MY_TOKEN": "t"})
    assert env == {"PATH": "/bin", "PLAIN": "https://host/"}
    built = build_sandbox_env({"ERP_TOKEN": "v"}, base={"PATH": "/bin", "API_KEY": "k"}, overrides={"HOME": "/tmp"})
    assert built == {"HOME": "/tmp", "ERP_TOKEN": "v"}


def test_mask_secrets_longest_first():
    secrets = {"A": "abc", "B": "abcdef"}
    assert mask_secrets("x abcdef y abc", secrets) == f"x {MASK} y {MASK}"


def test_capture_keeps_head_and_tail_and_counts():
    cap = OutputCapture(10)
    for chunk in (b"0123", b"4567", b"89ab", b"cdef"):
        cap.feed(chunk)
    out = cap.close()
    assert (out.head, out.tail, out.omitted_chars) == ("01234", "bcdef", 6)
    cap.feed(b"late")  # after close: ignored
    assert cap.close() == out


def test_capture_decodes_split_multibyte_characters():
    cap = OutputCapture(100)
    data = "héllo €".encode()
    for i in range(len(data)):
        cap.feed(data[i:i + 1])
    assert cap.close().render() == "héllo €"


def test_render_masks_a_secret_cut_by_truncation():
    secret = "SECRET-VALUE-123456"
    text = "x" * 95 + secret + "y" * 100
    bounded = bound_text(text, 100)
    rendered = bounded.render({"S": secret})
    assert "SECRET-" not in rendered and "123456" not in rendered


@pytest.mark.parametrize("pattern, path, expected", [
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),
    ("**/*.py", "a.py", True),
    ("**/*.py", "src/deep/a.py", True),
    ("src/**", "src/x/y", True),
    ("*.{md,txt}", "r.txt", True),
    ("*.{md,txt}", "r.py", False),
    ("data_?.csv", "data_1.csv", True),
    ("[!a]*.csv", "a.csv", False),
    ("[!a]*.csv", "b.csv", True),
    ("**/SKILL.md", "public/demo/SKILL.md", True),
])
def test_glob_patterns(pattern, path, expected):
    assert bool(compile_glob(pattern).match(path)) is expected


def test_brace_expansion_is_bounded():
    assert sorted(expand_braces("a{b,c{d,e}}")) == ["ab", "acd", "ace"]
    with pytest.raises(ValueError):
        expand_braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")
