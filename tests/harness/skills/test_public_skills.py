"""The public skills end to end: the scripted model follows each SKILL.md, the skill's
scripts really run in the sandbox (both providers), and what they write opens."""

from __future__ import annotations

import json
import subprocess
import zipfile

import pytest
from langchain_core.messages import ToolMessage

from harness.sandbox import reset_sandbox_provider, set_sandbox_provider
from harness.skills import loader
from harness.skills.install import install_archive
from harness.skills.loader import custom_root, load_public_skills, load_skills
from harness.testing import call, tool_reply
from harness.tools.sandbox_tools import get_sandbox_tools
from tests.harness.agents.conftest import app_config
from tests.harness.sandbox.conftest import make_provider
from tests.support import container_engine
from tests.harness.skills.test_agent_skills import SkillAgent

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
PUBLIC = "/mnt/skills/public"


@pytest.fixture(params=["local", "bwrap", pytest.param("container", marks=pytest.mark.container)])
def sandbox_kind(request, tmp_path, monkeypatch):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    loader.clear_cache()
    provider = make_provider(request.param, None, bash_command_timeout=60)
    set_sandbox_provider(provider)
    try:
        yield request.param
    finally:
        reset_sandbox_provider()
        if request.param == "container":
            container_engine.remove_test_containers()
            container_engine.unmount_thread_disks(tmp_path / "home")


def bash(command):
    return tool_reply(call("bash", description="run the skill's script", command=command))


def tool_outputs(h):
    return [m.content for m in h.state()["messages"] if isinstance(m, ToolMessage)]


def test_the_public_skills_are_found():
    names = {s.name for s in load_public_skills()}
    assert names >= {"deep-research", "data-analysis", "skill-creator", "skill-reviewer", "report-writer", "slide-deck"}


async def test_data_analysis_charts_an_uploaded_csv(sandbox_kind):
    from PIL import Image

    h = SkillAgent([bash(f"python3 {PUBLIC}/data-analysis/scripts/analyze.py /mnt/user-data/uploads/sales.csv --out /mnt/user-data/outputs"),
                    "Sales peak in Oslo."], tools=get_sandbox_tools(), app=app_config())
    uploads = h.outputs.parent / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    (uploads / "sales.csv").write_text("city,sales\nOslo,120\nBergen,80\nTromso,15\n")
    await h.send("/data-analysis which city sells most?")
    assert "[exit code: 0]" in tool_outputs(h)[0], tool_outputs(h)
    chart = h.outputs / "sales-sales.png"
    with Image.open(chart) as image:
        image.load()
        assert image.size == (640, 360)
    summary = (h.outputs / "sales-summary.md").read_text()
    assert "mean 71.67" in summary and "max 120" in summary


async def test_data_analysis_script_errors_reach_the_agent(sandbox_kind):
    h = SkillAgent([bash(f"python3 {PUBLIC}/data-analysis/scripts/analyze.py /mnt/user-data/uploads/missing.csv"), "It is missing."],
                   tools=get_sandbox_tools(), app=app_config())
    result = await h.send("/data-analysis look at missing.csv")
    out = tool_outputs(h)[0]
    assert "error: /mnt/user-data/uploads/missing.csv does not exist" in out and "[exit code: 1]" in out
    assert result["messages"][-1].content == "It is missing."


async def test_skill_creator_packages_a_skill_that_installs_and_loads(sandbox_kind):
    work = "/mnt/user-data/workspace"
    h = SkillAgent([
        bash(f"python3 {PUBLIC}/skill-creator/scripts/init_skill.py weekly-digest --description 'Write the weekly digest.' --dir {work}"),
        bash(f"python3 {PUBLIC}/skill-creator/scripts/validate_skill.py {work}/weekly-digest"),
        bash(f"python3 {PUBLIC}/skill-creator/scripts/package_skill.py {work}/weekly-digest --out /mnt/user-data/outputs"),
        "Install weekly-digest.skill on the Skills page.",
    ], tools=get_sandbox_tools(), app=app_config())
    await h.send("/skill-creator make me a weekly digest skill")
    outs = tool_outputs(h)
    assert all("[exit code: 0]" in o for o in outs), outs
    assert "OK" in outs[1]
    archive = h.outputs / "weekly-digest.skill"
    with zipfile.ZipFile(archive) as zf:
        assert "weekly-digest/SKILL.md" in zf.namelist()
    result = install_archive(archive, user_id="tester", public_names={s.name for s in load_public_skills()})
    assert result.name == "weekly-digest" and not [f for f in result.findings if f.severity != "warning"]
    installed = {s.name: s for s in load_skills("tester")}["weekly-digest"]
    assert installed.container_path == "/mnt/skills/custom/weekly-digest"
    assert (custom_root("tester") / "weekly-digest" / "scripts" / "run.py").is_file()
    # and its script runs from the read-only mount
    h2 = SkillAgent([bash("python3 /mnt/skills/custom/weekly-digest/scripts/run.py"), "done"], tools=get_sandbox_tools(), app=app_config())
    await h2.send("/weekly-digest go")
    assert "weekly-digest: replace this" in tool_outputs(h2)[0]


async def test_skill_creator_validation_reports_errors(sandbox_kind):
    h = SkillAgent([bash("mkdir -p /mnt/user-data/workspace/bad && printf -- '---\\nname: Bad\\n---\\n' > /mnt/user-data/workspace/bad/SKILL.md && "
                         f"python3 {PUBLIC}/skill-creator/scripts/package_skill.py /mnt/user-data/workspace/bad --out /mnt/user-data/outputs"),
                    "fixing"], tools=get_sandbox_tools(), app=app_config())
    await h.send("/skill-creator package bad")
    out = tool_outputs(h)[0]
    assert "error: name must be" in out and "error: description is required" in out and "not packaged" in out
    assert not (h.outputs / "bad.skill").exists()


async def test_deep_research_checks_the_reports_citations(sandbox_kind):
    report = "# Answer\\nOslo is large [1] and old [2].\\n\\n## Sources\\n1. [A](https://a.example) — size\\n"
    h = SkillAgent([
        tool_reply(call("write_file", description="report", path="/mnt/user-data/outputs/report.md", content=report.replace("\\n", "\n"))),
        bash(f"python3 {PUBLIC}/deep-research/scripts/check_citations.py /mnt/user-data/outputs/report.md"),
        "Fixing the missing source.",
    ], tools=get_sandbox_tools(), app=app_config())
    await h.send("/deep-research how big is Oslo?")
    out = tool_outputs(h)[-1]
    assert "problem: [2] is cited but not listed under Sources" in out and "[exit code: 1]" in out


def needs_toolbox():
    from harness.config.app_config import SandboxConfig
    from harness.sandbox.provider import toolbox_dir

    if toolbox_dir(SandboxConfig()) is None:
        pytest.skip("the sandbox toolbox is not built (scripts/bootstrap.sh builds .toolbox/)")


REPORT = """# Quarterly report

Sales grew **12%** in the *third* quarter, led by `Oslo`.

## Highlights
- Oslo up 20%
- Bergen flat

## Numbers
| city | sales |
|---|---|
| Oslo | 120 |
| Bergen | 80 |

1. Keep the Oslo team
2. Review Bergen
"""


async def test_report_writer_makes_a_docx_and_a_pdf(sandbox_kind):
    needs_toolbox()
    h = SkillAgent([
        tool_reply(call("write_file", description="report", path="/mnt/user-data/workspace/q3.md", content=REPORT)),
        bash(f"python3 {PUBLIC}/report-writer/scripts/render_report.py /mnt/user-data/workspace/q3.md --out /mnt/user-data/outputs"),
        "Here is the report.",
    ], tools=get_sandbox_tools(), app=app_config())
    await h.send("/report-writer write the Q3 report")
    out = tool_outputs(h)[-1]
    assert "[exit code: 0]" in out and "q3.pdf (1 page)" in out, out
    # Opened with python-docx and pypdf, from the toolbox (the test environment lacks them).
    probe = (
        "import json, sys, docx, pypdf\n"
        "d = docx.Document(sys.argv[1])\n"
        "print(json.dumps({'first': d.paragraphs[0].text, 'bullets': [p.text for p in d.paragraphs if p.style.name == 'List Bullet'],"
        " 'cell': d.tables[0].cell(1, 0).text, 'pdf': pypdf.PdfReader(sys.argv[2]).pages[0].extract_text()}))\n"
    )
    from harness.config.app_config import SandboxConfig
    from harness.sandbox.provider import toolbox_dir

    done = subprocess.run([str(toolbox_dir(SandboxConfig()) / "bin" / "python"), "-c", probe, str(h.outputs / "q3.docx"), str(h.outputs / "q3.pdf")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    opened = json.loads(done.stdout)
    assert opened["first"] == "Quarterly report" and "Oslo up 20%" in opened["bullets"] and opened["cell"] == "Oslo"
    assert "Quarterly report" in opened["pdf"] and "Oslo" in opened["pdf"]


OUTLINE = """# Q3 review
Sales and plans

## Sales by city
- Oslo leads
- Bergen steady
chart: bar | Sales | Oslo=120, Bergen=80, Tromso=15

## Next steps
- Hire in Oslo
chart: line | Trend | Q1=10, Q2=12, Q3=15
"""


async def test_slide_deck_builds_a_pptx_with_charts(sandbox_kind):
    needs_toolbox()
    from pptx import Presentation

    h = SkillAgent([
        tool_reply(call("write_file", description="outline", path="/mnt/user-data/workspace/q3deck.md", content=OUTLINE)),
        bash(f"python3 {PUBLIC}/slide-deck/scripts/build_deck.py /mnt/user-data/workspace/q3deck.md --out /mnt/user-data/outputs"),
        "Deck ready.",
    ], tools=get_sandbox_tools(), app=app_config())
    await h.send("/slide-deck make a Q3 deck")
    out = tool_outputs(h)[-1]
    assert "[exit code: 0]" in out and "(3 slides)" in out, out
    deck = Presentation(str(h.outputs / "q3deck.pptx"))
    slides = list(deck.slides)
    assert slides[0].shapes.title.text == "Q3 review"
    assert slides[1].shapes.title.text == "Sales by city"
    for slide in slides[1:]:
        assert any(shape.shape_type == 13 for shape in slide.shapes)  # a picture: the chart
    assert "Oslo leads" in "".join(s.text_frame.text for s in slides[1].shapes if s.has_text_frame)


async def test_slide_deck_reports_a_bad_outline_line(sandbox_kind):
    needs_toolbox()
    h = SkillAgent([
        tool_reply(call("write_file", description="outline", path="/mnt/user-data/workspace/bad.md", content="# T\n## S\nchart: radar | x | a=1\n")),
        bash(f"python3 {PUBLIC}/slide-deck/scripts/build_deck.py /mnt/user-data/workspace/bad.md --out /mnt/user-data/outputs"),
        "Fixing.",
    ], tools=get_sandbox_tools(), app=app_config())
    await h.send("/slide-deck deck")
    out = tool_outputs(h)[-1]
    assert "error: line 3:" in out and "[exit code: 1]" in out
