"""Another spelling of every name the spec does not show, for tests that run in both spellings.

A test marked ``@pytest.mark.spellings`` runs twice: against the sandbox in our spelling, and against
one that spells every unshown name otherwise (``THEIRS``), with ``MEDIAGEN_WIRE`` naming a names file of
that spelling, as a user of such a service would set it. Importable from any test module.
"""

from pathlib import Path

from mediagen_nb.protocol import wire

THEIRS = wire.parse(
    {
        "catalog": {
            "list": "items",
            "id": "slug",
            "name": "displayName",
            "description": "summary",
            "output_type": "type",
            "group": "category",
            "credits": "creditCost",
            "preview": "thumbnail",
            "links": "endpoints",
        },
        "estimate": {"model": "model", "credits": "cost", "billing": "explanation"},
        "job": {
            "topic": "subject",
            "seconds": "targetSeconds",
            "gender": "presenterGender",
            "look": "presenterStyle",
            "voice": "voiceName",
            "flow": "editStyle",
            "captions": "burnCaptions",
            "music": "musicBed",
            "idempotency_key": "idempotency_key",
            "webhook": "webhookUrl",
        },
        "job_read": {
            "progress": "fraction",
            "script": "scriptText",
            "portrait": "presenterImageUrl",
            "lipsync": "lipSyncUrl",
            "credits": "credits",
            "edit_report": "report",
            "degraded": "simplified",
        },
        "options": {
            "voices": "voiceNames",
            "genders": "presenterGenders",
            "looks": "styles",
            "flows": "editStyles",
            "seconds": "lengthSeconds",
            "defaults": "defaultValues",
        },
        "blueprint": {"started": "building", "reason": "message"},
        "pricing_types": {
            "per_option": "by_option",
            "per_media_second": "per_second_of_media",
            "per_text_length": "per_characters",
            "per_output_second": "per_second_of_output",
        },
    },
    "tests/_spellings.py",
)[0]
SPELLINGS = {"ours": wire.DEFAULT, "theirs": THEIRS}


def names_file(folder: Path, names: wire.Names = THEIRS) -> Path:
    """A names file of ``names`` in ``folder`` (the file ``MEDIAGEN_WIRE`` and ``--wire`` read)."""
    path = folder / "names.toml"
    path.write_text(wire.dump(names), encoding="utf-8")
    return path
