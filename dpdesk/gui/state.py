"""The session the window shows: dataset, configurations, results. Plain data plus signals.

Pages read and change the state; they listen to its signals instead of to each other.
It converts to and from a :class:`dpdesk.project.Project` for saving.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal

from .. import mechanisms as registry
from ..project import Project


@dataclass
class Configuration:
    """One mechanism with its parameter values (without the shared declared bound)."""

    mechanism: str
    params: dict = field(default_factory=dict)
    enabled: bool = True


DEFAULT_EPSILON = math.log(2)
# what the steward declared or chose about one dataset: a new dataset starts from its own (or from
# nothing), never from the facts of the dataset before it (a web shop's Δ is not the census's)
DECLARED = ("configurations", "bound", "bound_proposed", "typical_row_length", "recommendation_used", "epsilon",
            "release_choice", "goal")


class AppState(QObject):
    dataset_changed = Signal()
    config_changed = Signal()
    epsilon_changed = Signal(float)
    comparison_changed = Signal()
    release_changed = Signal()
    ledger_changed = Signal()
    exported = Signal()  # the current release was written to files
    publication_changed = Signal()  # who the data is about, or how its published list is declared

    def __init__(self) -> None:
        super().__init__()
        self.dataset = None
        self.dataset_name: str = ""  # the people the data is about: the budget ledger's key
        self.domain_declaration = None  # how the published list of items is declared (DomainDeclaration)
        self.import_settings: dict = {}
        self.configurations: dict[str, Configuration] = {}
        self.bound: int | None = None
        self.bound_proposed = False  # True while Δ is the recommendation's proposal, not the steward's own
        # the steward's statement of about how many items a typical person holds (a declaration,
        # never read from the data): the recommendation and the synthetic stand-in use it
        self.typical_row_length: float | None = None
        # {"mechanism": id, "chosen_how": sentence} once "Use the recommendation" was pressed
        self.recommendation_used: dict | None = None
        self.epsilon: float = DEFAULT_EPSILON
        # what matters most in the release, as ``dpdesk recommend --goal`` takes it (evaluation.goals): the
        # recommendation is learnt for it and the comparison's first measure follows it
        self.goal: str = "all"
        self.compare_settings: dict = {"epsilons": [0.1, 0.4, math.log(2), 1.1, 2.0], "repeats": 10, "seed": 1}
        self.comparison = None
        self.comparison_dataset = None  # the data the comparison ran on (true data or a stand-in)
        self.comparison_on_standin = False
        # every comparison run on this dataset (what dpdesk observed, for the report's "how it was chosen")
        self.comparison_runs: list[dict] = []
        self._from_project = False
        self.release = None
        self.release_files: dict = {}
        self.exported_to = None  # the folder the current release was exported to (None: not yet)
        self.release_choice: dict = {}
        self.project_path = None
        self.dirty = False
        self._declared_by_name: dict[str, dict] = {}  # this session's declarations of the datasets left

    # -- dataset -----------------------------------------------------------------------
    def set_dataset(self, dataset, settings: dict, name: str | None = None, declaration=None) -> None:
        """Take a new dataset. Unless it comes with a project (which holds its own declarations), the
        declarations of the dataset before are put aside under its name and the new one starts from
        what was declared for its name earlier in this session, or from nothing: no Δ, no typical row
        length, the default ε and mechanisms, no recommendation used."""
        if self.dataset is not None and not self._from_project:
            self._declared_by_name[self.dataset_name] = self._declared()
            self._restore(self._declared_by_name.get(name if name is not None else self.dataset_name))
        self.dataset = dataset
        self.import_settings = dict(settings)
        if name is not None:
            self.dataset_name = name
        self.domain_declaration = declaration
        self.comparison = None
        self.comparison_dataset = None
        if not self._from_project:  # a project opened with its data keeps the comparisons it recorded
            self.comparison_runs = []
        self._from_project = False
        self.release = None
        self.release_files = {}
        self.exported_to = None
        kind = dataset.kind
        self.configurations = {m.id: c for m, c in ((registry.get(k), c) for k, c in self.configurations.items())
                               if m.data_kind == kind}
        if not self.configurations:
            defaults = ["lpa", "gs", "dpsense-s"] if kind == "incidence" else ["geometric", "filter2", "filter-priority"]
            for mechanism_id in defaults:
                try:
                    registry.get(mechanism_id)
                except Exception:  # noqa: BLE001 - a family that is not installed
                    continue
                self.configurations[mechanism_id] = Configuration(mechanism_id)
        self.dirty = True
        self.dataset_changed.emit()
        self.config_changed.emit()
        self.epsilon_changed.emit(self.epsilon)
        self.comparison_changed.emit()
        self.release_changed.emit()

    def _declared(self) -> dict:
        return {name: copy.deepcopy(getattr(self, name)) for name in DECLARED}

    def _restore(self, declared: dict | None) -> None:
        """The declarations of one dataset (None: a dataset with none yet)."""
        declared = declared or {"configurations": {}, "bound": None, "bound_proposed": False,
                                "typical_row_length": None, "recommendation_used": None,
                                "epsilon": DEFAULT_EPSILON, "release_choice": {}, "goal": "all"}
        for name in DECLARED:
            setattr(self, name, copy.deepcopy(declared.get(name, "all" if name == "goal" else None)))

    # -- configuration -----------------------------------------------------------------
    def enabled(self) -> list[Configuration]:
        return [c for c in self.configurations.values() if c.enabled]

    def params_for(self, mechanism_id: str) -> dict:
        """A configuration's parameters plus the shared declared bound where the mechanism takes one."""
        mechanism = registry.get(mechanism_id)
        params = dict(self.configurations.get(mechanism_id, Configuration(mechanism_id)).params)
        names = {p.name for p in mechanism.params}
        if "bound" in names and self.bound is not None:
            params["bound"] = self.bound
        return {k: v for k, v in params.items() if k in names and v is not None and v != ""}

    def set_configuration(self, mechanism_id: str, enabled: bool | None = None, **params) -> None:
        configuration = self.configurations.setdefault(mechanism_id, Configuration(mechanism_id, enabled=False))
        if enabled is not None:
            configuration.enabled = enabled
        configuration.params.update(params)
        self.dirty = True
        self.config_changed.emit()

    def set_bound(self, bound: int | None) -> None:
        self.bound = bound
        self.bound_proposed = False  # the steward's own declaration from now on
        self.dirty = True
        self.config_changed.emit()

    def set_goal(self, goal: str) -> None:
        """What matters most (``all``, ``largest:K`` or ``target:N,R``, checked by the caller)."""
        if goal != self.goal:
            self.goal = goal
            self.dirty = True
            self.config_changed.emit()

    def set_typical_row_length(self, length: float | None) -> None:
        self.typical_row_length = length
        self.dirty = True
        self.config_changed.emit()

    def use_recommendation(self, mechanism_id: str, params: dict, chosen_how: str, also=()) -> None:
        """Tick exactly the recommended mechanism and ``also`` (``(id, params)`` pairs: the alternatives worth
        comparing with it), each with its parameters (a proposed Δ becomes the declared bound), and
        remember how it was chosen, for the Release page's statement."""
        params = dict(params)
        bound = params.pop("bound", None)
        if bound is not None and (self.bound is None or self.bound_proposed):
            self.bound, self.bound_proposed = int(bound), True
        self.recommendation_used = {"mechanism": mechanism_id, "chosen_how": chosen_how}
        chosen = {mechanism_id: params, **{other: {k: v for k, v in settings.items() if k != "bound"}
                                          for other, settings in also if other != mechanism_id}}
        for configuration in self.configurations.values():
            configuration.enabled = configuration.mechanism in chosen
        for chosen_id, settings in chosen.items():
            configuration = self.configurations.setdefault(chosen_id, Configuration(chosen_id))
            configuration.enabled = True
            # exactly the advice's settings: one left from an earlier advice (AHP's median, its share of ε) would
            # make a mechanism the recommendation never measured
            configuration.params = dict(settings)
        self.dirty = True
        self.config_changed.emit()

    def set_epsilon(self, epsilon: float) -> None:
        if abs(epsilon - self.epsilon) > 1e-12:
            self.epsilon = float(epsilon)
            self.dirty = True
            self.epsilon_changed.emit(self.epsilon)

    # -- results -----------------------------------------------------------------------
    def set_comparison(self, comparison, dataset, on_standin: bool, standin: str = "") -> None:
        """A finished (or cancelled) comparison; ``standin`` says what the stand-in was."""
        from ..workflow import comparison_run

        self.comparison = comparison
        self.comparison_dataset = dataset
        self.comparison_on_standin = on_standin
        results = getattr(comparison, "results", None)
        if results is not None and len(results):  # a run that showed something
            self.comparison_runs.append(comparison_run(
                list(dict.fromkeys(results["mechanism"])), sorted(set(results["epsilon"])),
                on_true_data=not on_standin, standin=standin))
            self.dirty = True
        self.comparison_changed.emit()

    def set_publication(self, name: str, declaration) -> None:
        """Change who the data is about and how the published list is declared."""
        self.dataset_name, self.domain_declaration = name, declaration
        self.dirty = True
        self.publication_changed.emit()
        self.ledger_changed.emit()
        self.release_changed.emit()

    def set_release(self, release, files: dict) -> None:
        self.release = release
        self.release_files = files
        self.exported_to = None
        self.release_changed.emit()
        self.ledger_changed.emit()

    def set_exported(self, folder) -> None:
        """The current release was written to ``folder``."""
        self.exported_to = folder
        self.exported.emit()

    # -- projects ----------------------------------------------------------------------
    def to_project(self) -> Project:
        data = {}
        where = ("path",) if self.import_settings.get("path") else ("sql", "query") \
            if self.import_settings.get("sql") else ()
        if where:
            options = {k: v for k, v in self.import_settings.items() if k not in (*where, "format")}
            data = {**{k: self.import_settings[k] for k in where},
                    "format": self.import_settings.get("format", "auto"), "options": options}
        mechanisms = [{"mechanism": c.mechanism, "params": self.params_for(c.mechanism), "enabled": c.enabled}
                      for c in self.configurations.values()]
        compare = dict(self.compare_settings)
        compare["epsilon"] = self.epsilon
        compare["bound"] = self.bound
        compare["typical_row_length"] = self.typical_row_length
        compare["goal"] = self.goal
        compare["runs"] = list(self.comparison_runs)  # read by `dpdesk release --project` for the report
        release = dict(self.release_choice)
        if self.dataset_name:
            release["dataset"] = self.dataset_name
        if self.domain_declaration is not None:
            release["items"] = self.domain_declaration.to_json()
        return Project(data=data, mechanisms=mechanisms, compare=compare, release=release)

    def apply_project(self, project: Project) -> None:
        """The declarations a project holds (its dataset follows with :meth:`set_dataset`)."""
        if self.dataset is not None:
            self._declared_by_name[self.dataset_name] = self._declared()
        self._restore(None)  # what the project does not say is not taken from the dataset before
        for item in project.mechanisms:
            params = dict(item.get("params") or {})
            params.pop("bound", None)
            self.configurations[item["mechanism"]] = Configuration(item["mechanism"], params,
                                                                   bool(item.get("enabled", True)))
        compare = dict(project.compare)
        self.epsilon = float(compare.pop("epsilon", DEFAULT_EPSILON))
        bound = compare.pop("bound", None)
        self.bound = int(bound) if bound is not None else None
        length = compare.pop("typical_row_length", None)
        self.typical_row_length = float(length) if length is not None else None
        self.goal = str(compare.pop("goal", None) or "all")
        self.compare_settings.update({k: v for k, v in compare.items() if k in ("epsilons", "repeats", "seed")})
        self.comparison_runs = list(compare.get("runs") or [])
        self._from_project = True
        self.release_choice = dict(project.release)
        self.dataset_name = str(project.release.get("dataset") or "")
        self.domain_declaration = project.items_declaration()
        self.project_path = project.path
        self.dirty = False
        self.config_changed.emit()
        self.epsilon_changed.emit(self.epsilon)
