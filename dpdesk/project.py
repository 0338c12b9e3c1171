"""Project files (``.dpdesk``): the import settings and mechanism configurations as JSON.

The GUI saves and opens them; ``dpdesk release --project FILE`` runs the chosen release
headless. Paths are stored relative to the project file when they can be.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ParameterError

FORMAT_VERSION = 1


@dataclass
class Project:
    data: dict = field(default_factory=dict)  # {"path": ..., "format": ..., "options": {...}}
    mechanisms: list[dict] = field(default_factory=list)  # [{"mechanism": id, "params": {...}, "label": ...}]
    compare: dict = field(default_factory=dict)  # {"epsilons": [...], "repeats": n, "seed": s}
    # {"mechanism": id, "epsilon": e, "params": {...}, "chosen_how": ..., "dataset": name, "items": declaration}
    release: dict = field(default_factory=dict)
    path: Path | None = None

    def to_json(self, base: Path | None = None) -> dict:
        data = dict(self.data)
        if "path" in data and base is not None:
            try:
                data["path"] = os.path.relpath(Path(data["path"]).resolve(), base.resolve())
            except ValueError:  # another drive
                data["path"] = str(Path(data["path"]).resolve())
        return {"dpdesk_project": FORMAT_VERSION, "data": data, "mechanisms": self.mechanisms,
                "compare": self.compare, "release": self.release}

    def save(self, path) -> Path:
        from .report.export import atomic_write_text

        path = Path(path)
        text = json.dumps(self.to_json(path.parent), indent=2, default=str)
        atomic_write_text(path, text, force=True)
        self.path = path
        return path

    @classmethod
    def load(cls, path) -> "Project":
        path = Path(path)
        try:
            content = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ParameterError(f"The project file {path} does not exist.") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ParameterError(f"The project file {path.name} cannot be read: {error}") from None
        if not isinstance(content, dict) or content.get("dpdesk_project") != FORMAT_VERSION:
            raise ParameterError(f"{path.name} is not a dpdesk project file (version {FORMAT_VERSION}).")
        data = dict(content.get("data") or {})
        if "path" in data and not os.path.isabs(data["path"]):
            data["path"] = str((path.parent / data["path"]).resolve())
        return cls(data=data, mechanisms=list(content.get("mechanisms") or []),
                   compare=dict(content.get("compare") or {}), release=dict(content.get("release") or {}),
                   path=path)

    def load_data(self, **kwargs):
        from .data import load

        if not self.data.get("path"):
            raise ParameterError("The project does not name a data file.")
        options = dict(self.data.get("options") or {})
        return load(self.data["path"], format=self.data.get("format", "auto"), **options, **kwargs)

    def items_declaration(self):
        """How the release's item (or cell) domain is declared (``None`` if the project does not say)."""
        from .data.domain import DomainDeclaration

        value = self.release.get("items")
        return None if value is None else DomainDeclaration.from_json(value)

    def release_choice(self) -> dict:
        if not self.release.get("mechanism") or self.release.get("epsilon") is None:
            raise ParameterError("The project has no release chosen (mechanism and ε); choose one on the "
                                 "Release page and save the project.")
        return self.release
