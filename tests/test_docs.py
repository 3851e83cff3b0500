"""docs/service.md describes the service the code implements, and the README points there.

Issue 20: the README linked the specification outside the repository (``../shared/...``), a file no
user of the project has. docs/service.md is the service in the project's words: every path of
``protocol/paths.py`` and every message the specification names (``protocol/messages.py``) is in it,
and every file it links exists.
"""

import re
from pathlib import Path

from mediagen_nb.protocol import limits, messages
from mediagen_nb.protocol.paths import PATHS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "service.md"

# The messages of the specification's error table (their starts), as protocol/messages.py spells them.
SPEC_MESSAGES = (
    messages.MISSING_CREDENTIALS,
    messages.INVALID_KEY,
    messages.SUSPENDED,
    messages.KEY_RATE_LIMIT,
    messages.TOO_MANY_GENERATIONS,
    messages.INPUT_NOT_OBJECT,
    messages.INVALID_GENERATION_ID,
    messages.GENERATION_NOT_FOUND,
    messages.UNSUPPORTED_MEDIA_FORMAT,
    messages.UNREADABLE_VIDEO_DURATION,
    messages.PROMPT_MODERATED,
    messages.IMAGE_MODERATED,
    messages.AT_CAPACITY,
    messages.WEBHOOK_HTTPS,
    messages.WEBHOOK_HOST,
    messages.URL_MUST_BE_HTTPS,
    messages.UNSUPPORTED_LINK,
    messages.PHOTO_POST,
    messages.FLOW_NOT_READY,
    messages.STILL_READING_SHOTS,
    messages.CLIP_OUT_OF_RANGE,
    messages.FLOW_NOT_FOUND,
    messages.RUN_NOT_FOUND,
    messages.GENERATION_TIMED_OUT,
    messages.unknown_model("...", ["..."]),
    messages.model_not_found(["..."]),
    messages.missing_field("..."),
    messages.media_not_reachable("audio"),
    messages.not_enough_credits(1, 0, "x").split(":")[0],
    messages.key_cap_reached(0).split("(")[0].strip(),
    messages.unknown_replication_model([]).split(".")[0],
)


def test_every_path_is_described() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [
        name
        for name, template in PATHS.items()
        if template.replace("{id}", "{jobId}") not in text and template not in text
    ]
    assert not missing, f"docs/service.md does not name {missing}"


def test_every_message_the_specification_names_is_described() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [message for message in SPEC_MESSAGES if message not in text]
    assert not missing, f"docs/service.md does not say {missing}"


def test_its_numbers_are_the_codes() -> None:
    text = DOC.read_text(encoding="utf-8")
    for figure in (
        f"{limits.REQUESTS_PER_KEY} a rolling minute",
        f"{limits.STARTS_PER_ACCOUNT} a rolling minute",
        f"{limits.WAIT_MIN_SECONDS} to {limits.WAIT_MAX_SECONDS} seconds",
        f"first {limits.IDEMPOTENCY_KEY_CHARS} characters",
        f"{limits.ANALYSIS_CREDITS} credits flat",
        f"{limits.SHORT_VIDEO_SECONDS_MIN} to {limits.SHORT_VIDEO_SECONDS_MAX} s, "
        f"default {limits.SHORT_VIDEO_SECONDS_DEFAULT}",
        f"{limits.ESTIMATE_FALLBACK_SECONDS:g} seconds while a run refuses the file",
    ):
        assert figure in text, figure


def test_every_link_of_it_leads_to_a_file_of_the_repository() -> None:
    for target in re.findall(r"\]\((\.\./[^)#]+)\)", DOC.read_text(encoding="utf-8")):
        assert (DOC.parent / target).resolve().is_file(), target


def test_the_readme_links_the_description_inside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/service.md)" in readme
    outside = [link for link in re.findall(r"\]\(([^)]+)\)", readme) if link.startswith("../")]
    assert not outside, f"the README links outside the repository: {outside}"


def test_the_engines_page_s_code_compiles() -> None:
    """docs/engines.md's examples run in tests/engines (with Ray and Daft); every block is Python here."""
    text = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]
    assert len(blocks) >= 3
    for block in blocks:
        compile(block, "docs/engines.md", "exec")
