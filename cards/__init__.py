"""Dataset card templates (Jinja, rendered with huggingface_hub ``DatasetCard.from_template``)."""

from pathlib import Path

TEMPLATES = Path(__file__).parent


def template_path(name: str) -> Path:
    path = TEMPLATES / f"{name}.md.j2"
    if not path.exists():
        raise FileNotFoundError(f"no card template for {name!r} ({path})")
    return path
