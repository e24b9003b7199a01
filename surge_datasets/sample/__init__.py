"""The embedded SAMPLE (made by ``scripts/make_sample.py``): a tiny release in the official format plus
real generated surveys, for offline demos and tests. Never report benchmark numbers on it."""

from pathlib import Path

SAMPLE_DIR = Path(__file__).parent


def sample_path() -> Path:
    """Folder holding corpus.json, surveys.json, queries.json and generated/ (official layouts)."""
    return SAMPLE_DIR


def generated_path(system: str = "Autosurvey") -> Path:
    """Folder of one system's generated surveys (one sub-folder per survey_id)."""
    return SAMPLE_DIR / "generated" / system / "output"
