"""``memory.token_counting: tiktoken`` counts cl100k_base tokens as bpe-openai's own encoding
does, without the vocabularies its package decodes at import (a fresh process, to see that)."""

import subprocess
import sys
import textwrap


def test_the_count_is_the_encodings_and_the_package_is_not_imported():
    code = textwrap.dedent("""
        import resource, sys, warnings
        from harness.memory.injection import token_counter
        texts = ["hello world", "Allergic to peanuts; prefers British spelling.", "多语言文本 mixed with English", "x" * 5000]
        ours = [token_counter("tiktoken")(t) for t in texts]
        assert "bpe_openai" not in sys.modules, "the package (and its vocabularies) got imported"
        warnings.simplefilter("ignore")
        import bpe_openai
        theirs = [len(bpe_openai.get_encoding("cl100k_base").encode_ordinary(t)) for t in texts]
        print(ours == theirs, ours, theirs)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True"), out.stdout
