"""Regenerate ``evals/amadeus/data/incharacter/`` from an InCharacter checkout (MIT) for the package.

The personality evaluation (``personae amadeus eval-personality``) must work on a fresh install, so the
two questionnaires it uses (16Personalities, 60 items; BFI, 44 items), the character list and
the personality-database labels of those two questionnaires ship as package data with
InCharacter's licence. Only the fields the evaluation reads are kept; the 16Personalities
``reverse`` list is kept as published (it is wrong for item 25; the code keys items by category).

    uv run python scripts/ship_incharacter_data.py ../shared/data/incharacter
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "evals" / "amadeus" / "data" / "incharacter"
ITEM_FIELDS = ("origin_en", "origin_zh", "rewritten_en", "rewritten_zh", "dimension", "category")
QUESTIONNAIRES = ("16Personalities", "BFI")


def _write(name: str, data: object) -> None:
    (OUT / name).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main(source: Path) -> None:
    """Write the trimmed files and the licence notice from ``source``."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name in QUESTIONNAIRES:
        full = json.loads((source / "questionnaires" / f"{name}.json").read_text(encoding="utf-8"))
        kept = {key: full[key] for key in ("name", "full_name", "range", "reverse", "categories")}
        kept["questions"] = {
            item_id: {field: item[field] for field in ITEM_FIELDS}
            for item_id, item in full["questions"].items()
        }
        kept["prompts"] = {"dim_desc": full["prompts"]["dim_desc"]}
        _write(f"{name}.json", kept)
    _write("characters.json", json.loads((source / "characters.json").read_text(encoding="utf-8")))
    labels = json.loads((source / "characters_labels.json").read_text(encoding="utf-8"))
    pdb = {
        character: {name: tests[name] for name in QUESTIONNAIRES if name in tests}
        for character, tests in labels["pdb"].items()
    }
    _write("labels_pdb.json", {"pdb": pdb})
    licence = (source / "LICENSE").read_text(encoding="utf-8")
    header = (
        "The files in this folder are derived from InCharacter (https://github.com/Neph0s/"
        "InCharacter):\nquestionnaires 16Personalities and BFI (items, categories, dimension "
        "descriptions),\ncharacters.json, and the personality-database (pdb) labels of "
        "characters_labels.json.\nThey are distributed under InCharacter's licence:\n\n"
    )
    (OUT / "LICENSE").write_text(header + licence.rstrip() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/incharacter"))
