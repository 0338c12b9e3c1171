"""The headless front end: ``dpdesk inspect | mechanisms | release | compare | recommend | plan | ledger | gui``.

Thin on purpose: every command calls the same workflow functions as the GUI. Errors a
user can cause print one line (``dpdesk: error: …``) and exit with status 2; nothing
half-written is left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

from . import __version__
from .errors import DpdeskError, ExportError, ParameterError

EXIT_USAGE = 2
# the GUI's colour themes (dpdesk.gui.theme.THEMES, not imported here: the CLI runs without Qt)
THEMES = ("system", "light", "dark", "high-contrast")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own errors: one line a steward can act on, status 2
        number = re.match(r"argument (\S+?)(?:/\S+)?: invalid (float|int) value: '(.*)'$", message)
        if number:
            option, kind, given = number.groups()
            example = "a number such as 0.5 (with a dot, not a comma)" if kind == "float" else "a whole number such as 20"
            message = f"{option} must be {example}, not '{given}'"
        print(f"dpdesk: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _column(value: str):
    return int(value) if value.isdigit() else value


def _import_options(args) -> dict:
    options = {}
    if getattr(args, "delimiter", None):
        options["delimiter"] = args.delimiter
    if getattr(args, "encoding", None):
        options["encoding"] = args.encoding
    if getattr(args, "header", None) is not None:
        options["header"] = args.header
    for key in ("person", "item", "value", "id_column", "count"):
        value = getattr(args, key, None)
        if value is not None:
            options[key] = _column(value)
    if getattr(args, "attributes", None):
        options["attributes"] = [_column(a.strip()) for a in args.attributes.split(",") if a.strip()]
    if getattr(args, "item_columns", None):
        options["item_columns"] = [_column(a.strip()) for a in args.item_columns.split(",") if a.strip()]
    if getattr(args, "column_names", None) is not None:
        options["column_names"] = [name.strip() for name in args.column_names.split(",")]
    if getattr(args, "sheet", None) is not None:
        options["sheet"] = args.sheet
    if getattr(args, "name", None):
        options["name"] = args.name
    if getattr(args, "memory_limit", None):
        options["memory_limit"] = args.memory_limit
    return options


def _add_import_arguments(parser) -> None:
    group = parser.add_argument_group("import options (default: detected)")
    group.add_argument("--format", default="auto",
                       choices=["auto", "transactions", "pairs", "matrix", "records", "cells"],
                       help="the file's layout (default: detected from its content)")
    group.add_argument("--delimiter", help="',', ';', '|', 'tab' or 'whitespace'")
    group.add_argument("--encoding", help="auto, utf-8, utf-8-sig, latin-1 or cp1252")
    header = group.add_mutually_exclusive_group()  # both at once was silently "the last one wins"
    header.add_argument("--header", dest="header", action="store_true", default=None, help="the first line is a header")
    header.add_argument("--no-header", dest="header", action="store_false", help="there is no header line")
    group.add_argument("--person", help="pairs: person column (name or 0-based position; default 0); records: the "
                                        "column that says who is who when one person may appear on several rows "
                                        "(their rows are then taken together; without it each row is one person)")
    group.add_argument("--item", help="pairs: item column (name or 0-based position; default 1)")
    group.add_argument("--value", help="pairs: value column (non-zero = the person has the item)")
    group.add_argument("--id-column", dest="id_column", help="matrix: identifier column")
    group.add_argument("--attributes", help="records/cells: comma-separated attribute columns (cell counts)")
    group.add_argument("--item-columns", dest="item_columns",
                       help="records: one item per value of these comma-separated columns (default: every column; "
                            "name them to leave out a column that identifies people)")
    group.add_argument("--column-names", dest="column_names", metavar="NAMES",
                       help="a file without a header line: comma-separated names of its columns, in order (they "
                            "name the items and attributes in the release and its report)")
    group.add_argument("--count", help="cells: the count column")
    group.add_argument("--sheet", help="Excel workbooks: the sheet to read, by name or 0-based position (default: the "
                                       "first sheet that holds data)")
    group.add_argument("--name", help="a name for the dataset in reports")
    group.add_argument("--engine", default="auto", choices=["auto", "memory", "duckdb", "spark"],
                       help="what reads the data: memory (the matrix in memory), duckdb (out of core, for data larger "
                            "than memory), spark (a cluster, with --spark-master), or auto (default: in memory when "
                            "the file fits with room for a release, else duckdb; duckdb for dpdesk convert's files)")
    group.add_argument("--spark-master", dest="spark_master", metavar="URL",
                       help="with --engine spark: the cluster's master URL (e.g. spark://host:7077, local[*])")
    group.add_argument("--sql", metavar="URL", help="read a database instead of a file: sqlite:///FILE.db or "
                                                    "postgresql://user@host/database (with --query)")
    group.add_argument("--query", help="with --sql: the SELECT whose result is the data (pairs, records or cells)")
    group.add_argument("--memory-limit", dest="memory_limit", metavar="SIZE",
                       help="the most memory the data may take while it is read, e.g. 2G or 500M (default: "
                            "$DPDESK_MEMORY_LIMIT, else half of the memory available); a larger file is refused")


def _load(args):
    from .loading import load

    if getattr(args, "sql", None):
        from .engine.sql import load_sql

        if getattr(args, "file", None):
            raise ParameterError(f"Give either a data file ({args.file}) or --sql URL --query …, not both.")

        options = _import_options(args)
        return load_sql(args.sql, args.query, "pairs" if args.format == "auto" else args.format,
                        **{k: v for k, v in options.items()})
    if getattr(args, "query", None):
        raise ParameterError("--query goes with --sql URL.")
    if not getattr(args, "file", None):
        raise ParameterError("Give a data FILE (or --sql URL --query …).")
    if args.engine == "spark" and not args.spark_master:
        raise ParameterError("--engine spark needs --spark-master URL (local[*] runs Spark on this machine).")
    data = load(args.file, format=args.format, engine=args.engine, spark_master=args.spark_master,
                **_import_options(args))
    _say_how_records_were_read(data, args)
    return data


def _say_how_records_were_read(data, args) -> None:
    """Notes on stderr (internal: they may describe the data) when a table was read as records."""
    from .data.layout import IDENTIFIER_SAMPLE

    source = getattr(data, "source", None) or {}
    if source.get("format") != "records":
        return
    flagged = list(getattr(data, "likely_identifiers", ()) or ())
    if flagged:
        one = len(flagged) == 1
        names = ", ".join(f"'{name}'" for name in flagged)
        it, its = ("it", "its") if one else ("them", "their")
        what = ("You chose it among the item columns" if one else "You chose them among the item columns") + \
            f", so {its} values are counted as items." if source.get("item_columns") else (
                f"{its.capitalize()} values are items now; a release that publishes the file's own item names is "
                f"refused until you choose the columns to count with --item-columns (leave {it} out).")
        print(f"dpdesk: warning (internal, not published): {names} look{'s' if one else ''} like "
              f"{'an identifier' if one else 'identifiers'}: nearly every one of the first {IDENTIFIER_SAMPLE:,} "
              f"rows has its own value. {what}", file=sys.stderr)
    if data.kind == "incidence" and source.get("person") is None:
        print("dpdesk: note: each row is taken as one person. If one person can appear on several rows (visits, "
              "admissions, purchases), give --person COLUMN: their rows are then taken together.", file=sys.stderr)
    if source.get("header") is False and source.get("column_names") is None:
        print("dpdesk: note: the file has no header line, so its columns are called 'column 1', 'column 2', … in the "
              "release and its report; name them with --column-names.", file=sys.stderr)


def _parse_params(pairs: list[str] | None) -> dict:
    params = {}
    for item in pairs or []:
        if "=" not in item:
            raise ParameterError(f"--param needs the form name=value, not '{item}'.")
        key, value = item.split("=", 1)
        params[key.strip()] = value.strip()
    return params


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ParameterError(f"{what} must be comma-separated numbers, not '{text}'.") from None


# --- commands --------------------------------------------------------------------------

def cmd_inspect(args) -> int:
    data = _load(args)
    summary = data.summary()
    if args.json:
        keys = ("rows", "columns", "nonzeros", "density", "max_row_count", "mean_row_count", "avg_column_count")
        print(json.dumps({**{k: summary[k] for k in keys}, "fingerprint": data.fingerprint}))
        return 0
    print(f"{data.describe()}  [format: {data.source.get('format')}]")
    if data.source.get("item column") is not None:  # taken by position unless named: say which
        print(f"  read as pairs: person = column '{data.source['person column']}', "
              f"item = column '{data.source['item column']}'")
    elif data.source.get("person column") is not None:
        print(f"  read as records: one person = one value of column '{data.source['person column']}' (their "
              "rows taken together)")
    labels = {
        "rows": "rows (people)", "columns": "columns (items)" if data.kind == "incidence" else "columns (cells, m)",
        "nonzeros": "non-zeros", "density": "density", "max_row_count": "max row count",
        "mean_row_count": "mean row count", "avg_column_count": "average column count",
    }
    for key, label in labels.items():
        value = summary[key]
        shown = f"{value:,}" if isinstance(value, int) else (f"{value:.6g}" if key == "density" else f"{value:,.2f}")
        print(f"  {label:<24} {shown}")
    print(f"  {'fingerprint':<24} {data.fingerprint}")
    print("These figures describe the true data: keep them internal.")
    return 0


def cmd_mechanisms(args) -> int:
    from . import mechanisms

    found = mechanisms()
    if args.json:
        print(json.dumps([m.describe() for m in found], indent=2, default=str))
        return 0
    family = None
    for m in found:
        if m.family != family:
            family = m.family
            print(f"\n{family}")
        params = ", ".join(p.name + ("*" if p.required else "") for p in m.params)
        print(f"  {m.id:<18} {m.summary}")
        if params:
            print(f"  {'':<18} parameters: {params}")
    print("\n* required. `dpdesk mechanisms --json` lists types, defaults, bounds and help.")
    return 0


def _mechanism_params(args) -> dict:
    params = _parse_params(args.param)
    if args.bound is not None:
        if "bound" in params and params["bound"] != str(args.bound):
            raise ParameterError(f"Δ is given twice: --bound {args.bound} and --param bound={params['bound']}. "
                                 "Give it once.")
        params["bound"] = args.bound
    return params


def _declaration(args):
    """The item (or cell) domain declaration of ``release`` (None when neither option is given)."""
    from .data.domain import parse_items_option

    if args.items is not None and args.domains is not None:
        raise ParameterError("Give --items (incidence data) or --domains (a table of cells), not both.")
    cells = args.domains is not None or args.domains_are_public
    facts = {"people": args.people, "row_length": args.typical_row_length, "expected_items": args.expected_items,
             "skew": args.skew}
    text = args.domains if cells else args.items
    if getattr(args, "dry_run", False) and (text or "").strip().lower() != "discover":
        facts.pop("people"), facts.pop("row_length")  # with declared items they shape the margin preview alone
    return parse_items_option(text,
                              public=args.domains_are_public if cells else args.items_are_public,
                              delta=args.delta, share=args.discover_share, bound=args.discover_bound, cells=cells,
                              route=args.discover_route, facts=facts)


def _output_folder(text: str) -> str:
    """argparse type of --out: an empty name is a slip (it meant the current folder once)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the output folder is empty; name a folder (. for this one)")
    return text


def _summary(written, *, spent: bool) -> dict:
    """What a release (or a re-export) did, from the ledger: the CLI's last line, or ``--json``."""
    from .privacy.ledger import Ledger

    release = written.release
    status = Ledger.open().status(release.dataset_name)
    return {
        "mechanism": release.mechanism, "dataset": release.dataset_name,
        "epsilon": float(release.epsilon), "delta": float(release.delta),
        "spent_now": {"epsilon": float(release.epsilon) if spent else 0.0,
                      "delta": float(release.delta) if spent else 0.0},
        "entry": (release.report.get("ledger") or {}).get("entry"),
        "published": (release.report.get("publication") or {}).get("form", "as recorded"),
        "dataset_epsilon_spent": status.spent, "dataset_delta_spent": status.delta, "cap": status.cap,
        "cap_remaining": status.remaining, "files": [str(path) for path in written],
    }


def _print_summary(summary: dict, *, spent: bool) -> None:
    """The file paths, one a line (scripts read them), then one line saying what was done."""
    for path in summary["files"]:
        print(path)
    delta = f", δ = {summary['delta']:.3g}" if summary["delta"] else ""
    cap = (f"of its cap {summary['cap']:g} ({summary['cap_remaining']:.4g} left)" if summary["cap"] is not None
           else "(no cap)")
    total_delta = f", δ = {summary['dataset_delta_spent']:.3g}" if summary["dataset_delta_spent"] else ""
    folder = Path(summary["files"][0]).parent if summary["files"] else Path(".")
    what = (f"Released {summary['dataset']} with {summary['mechanism']} at ε = {summary['epsilon']:.4g}{delta}"
            if spent else f"Wrote ledger entry #{summary['entry']} ({summary['mechanism']}) again, without new noise "
                          "or budget")
    print(f"{what} ({summary['published']}, with 95% margins): ledger entry #{summary['entry']}; "
          f"{summary['dataset']} has spent ε = {summary['dataset_epsilon_spent']:.4g}{total_delta} {cap}; "
          f"{len(summary['files'])} files in {folder}.")


def cmd_release(args) -> int:
    from .workflow import NOT_COMPARED, default_dataset_name, discovery_plan, observed_choice, release_to_files

    items = _declaration(args)
    observed = NOT_COMPARED
    if args.project:
        from .project import Project

        project = Project.load(args.project)
        choice = project.release_choice()
        mechanism = args.mechanism or choice["mechanism"]
        epsilon = args.epsilon if args.epsilon is not None else choice["epsilon"]
        params = dict(choice.get("params", {}))
        params.update(_mechanism_params(args))
        chosen_how = args.chosen_how or choice.get("chosen_how")
        observed = observed_choice(project.compare.get("runs"))  # comparisons the project file records
        args.raw = args.raw or bool(choice.get("raw"))
        items = items or project.items_declaration()
        dataset = args.dataset or choice.get("dataset") or default_dataset_name(project.data.get("path", ""))

        def read():
            return project.load_data(**({"memory_limit": args.memory_limit} if args.memory_limit else {}))
    else:
        if not args.file and not args.sql:
            raise ParameterError("Give a data FILE (or --project FILE, or --sql URL --query …).")
        if args.file and args.sql:  # before anything is read or spent: which data, and whose budget?
            raise ParameterError(f"Give either a data file ({args.file}) or --sql URL --query …, not both.")
        if not args.mechanism or args.epsilon is None:
            raise ParameterError("Give --mechanism and --epsilon (see `dpdesk mechanisms`).")
        if args.engine == "spark" and not args.spark_master:
            raise ParameterError("--engine spark needs --spark-master URL (local[*] runs Spark on this machine).")
        if args.engine == "spark":
            from .engine.spark import require_pyspark

            require_pyspark()  # before anything is read or spent
        mechanism, epsilon, params = args.mechanism, args.epsilon, _mechanism_params(args)
        chosen_how = args.chosen_how
        dataset = args.dataset or args.name or (default_dataset_name(args.file) if args.file else None)
        if dataset is None:
            raise ParameterError("Name the dataset the query reads with --dataset (the budget ledger adds up "
                                 "releases per dataset).")

        def read():
            return _load(args)
    if args.dry_run:
        return _dry_run(args, mechanism, epsilon, params, dataset, items)
    if args.out is None:
        raise ParameterError("Give --out DIR, the folder the release is written to (or --dry-run to see what the "
                             "release would spend without running it).")
    plan = discovery_plan(items, mechanism, epsilon, params)  # declared inputs only: told before anything is spent
    if plan is not None and not args.json:
        for line in plan.lines():
            print(f"dpdesk: {line}", file=sys.stderr)
    reports = [r.strip() for r in (args.report or "").split(",") if r.strip()]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    written = release_to_files(read, mechanism, epsilon, params, Path(args.out), dataset=dataset, items=items,
                               force=args.force, formats=formats, reports=reports,
                               internal_report=args.internal_report, internal_dir=args.internal_out,
                               chosen_how=chosen_how, observed=observed, raw=args.raw,
                               override_cap=args.override_cap, override_name=args.override_dataset_check,
                               attributes=_import_options(args).get("attributes"))
    with _printing_after_recording(written):
        summary = _summary(written, spent=True)
        if plan is not None:
            summary["discovery"] = plan.to_json()
        if args.json:
            print(json.dumps(summary, ensure_ascii=False))
        else:
            _print_summary(summary, spent=True)
        _warn_if_nothing_matched(written.release)
    return 0


def _dry_run(args, mechanism, epsilon, params, dataset, items) -> int:
    """What a release would spend, how its discovery would run and the margin each value would get (previewed on
    a stand-in, issue 28): every check on declared inputs, nothing read (but labels stated public), no noise,
    nothing recorded."""
    from .privacy.ledger import Ledger
    from .workflow import check_request

    declared = check_request(mechanism, epsilon, params, dataset=dataset, items=items,
                             override_cap=args.override_cap)
    status = Ledger.open().status(declared.dataset)
    plan = declared.discovery
    delta = plan.chosen.delta if plan is not None else 0.0
    preview, no_preview = _margin_preview(args, declared, params, items)
    result = {"dry_run": True, "mechanism": declared.mechanism.id, "dataset": declared.dataset,
              "epsilon": declared.epsilon, "delta": delta, "dataset_epsilon_spent": status.spent,
              "cap": status.cap, "cap_remaining": status.remaining,
              "discovery": plan.to_json() if plan is not None else None,
              "margin_preview": preview.to_json() if preview is not None else {"preview": False, "why": no_preview}}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    for line in plan.lines() if plan is not None else []:
        print(line)
    spent = f"ε = {declared.epsilon:g}" + (f" and δ ≤ {delta:.3g}" if delta else "")
    print(f"Dry run: the release of {declared.dataset} with {declared.mechanism.id} would spend {spent}; nothing "
          "was read, drawn or recorded.")
    print(preview.text if preview is not None else f"Margins of error: {no_preview}")
    return 0


def _margin_preview(args, declared, params, items):
    """(the margins previewed on a stand-in, or None and why not) for a dry run, from declared inputs only."""
    from .data.domain import HOW_DISCOVERED
    from .evaluation.preview import margin_preview
    from .evaluation.recommend import declared_size

    mechanism = declared.mechanism
    if items is not None and items.kind == HOW_DISCOVERED:
        from .mechanisms.discovery import ONE_PASS

        if getattr(declared.discovery, "route", None) == ONE_PASS:
            return None, ("none: the one-pass discovery lists the items whose noisy counts passed its threshold, "
                          "and among them the counts near the threshold are too high by an amount no margin bounds")
        if not args.expected_items:
            return None, ("the items are found during the release, so their number is not known yet; declare about "
                          "how many there are (--expected-items D) for a preview")
        size = args.expected_items
    elif declared.domain is not None and mechanism.data_kind == "incidence":
        size = declared.domain.size
    else:
        size = declared_size(items, args.file, mechanism.data_kind, args.format, _import_options(args))
    values = mechanism.validate(None, declared.epsilon, params)
    return margin_preview(mechanism.data_kind, mechanism.id, declared.epsilon, values, size,
                          typical_row_length=args.typical_row_length, people=args.people), ""


def _warn_if_nothing_matched(release) -> None:
    """Tell the steward (stderr, never a public file) when no declared item occurs in the data: every
    published count is then noise alone — a list for another dataset, or ids for a labelled file.

    After the release, not before: refusing because of what the data holds would be a decision
    on the data that no budget pays for (a refusal may depend on declared inputs only).
    """
    internal = getattr(release, "internal", None) or {}
    items = (release.report.get("public_facts") or {}).get("number of items (d)")
    absent = internal.get("declared items nobody has")
    if items and absent is not None and absent >= items:
        print(f"dpdesk: note (internal, not published): none of the {items:,} declared items occurs in the data, "
              "so every published count is noise alone. Check --items: a list for another dataset, or ids "
              "(range:D) for a file whose items are labels?", file=sys.stderr)


def cmd_convert(args) -> int:
    from .engine.sources import convert

    from .workflow import require_writable_folder

    options = _import_options(args)
    options.pop("name", None)
    try:
        require_writable_folder(Path(os.path.abspath(args.out)).parent, "The output file's folder",
                                "Nothing was written.")
        written = convert(args.file, args.out, format=args.format, **options)
    except OSError as error:  # the output cannot be written: read-only, a full disk, a name too long
        if missing_library_message(error) is not None:
            raise
        reason = error.strerror or (os.strerror(error.errno) if error.errno else str(error))
        raise ExportError(f"Cannot write {args.out}: {reason}. Nothing was written.") from None
    print(written)
    return 0


def cmd_export(args) -> int:
    from .workflow import reexport

    reports = [r.strip() for r in (args.report or "").split(",") if r.strip()]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    written = reexport(args.entry, Path(args.out), formats=formats, reports=reports, force=args.force, raw=args.raw)
    with _printing_after_recording(written):
        summary = _summary(written, spent=False)
        if args.json:
            print(json.dumps(summary, ensure_ascii=False))
        else:
            _print_summary(summary, spent=False)
    return 0


def cmd_compare(args) -> int:
    from .evaluation.compare import AVERAGE, ZEROS, Entry, comparison_table, run_comparison

    data = _load(args)
    params = _mechanism_params(args)
    from . import mechanisms as registry

    entries = []
    for mechanism_id in [m.strip() for m in args.mechanisms.split(",") if m.strip()]:
        mechanism = registry.get(mechanism_id)
        names = {p.name for p in mechanism.params}
        entries.append(Entry(mechanism_id, {k: v for k, v in params.items() if k in names}))
        if "bound" in params and "bound" not in names and getattr(mechanism, "without_bound", None):
            print(f"note: {mechanism_id} needs no bound Δ and does not use --bound {params['bound']}: "
                  f"{mechanism.without_bound}.", file=sys.stderr)
    epsilons = _floats(args.epsilon, "--epsilon")
    if args.repeats < 1:
        raise ParameterError("--repeats must be at least 1.")

    def progress(fraction, message):
        if not args.quiet:
            print(f"\r{fraction:6.1%}  {message[:70]:<70}", end="", file=sys.stderr, flush=True)

    comparison = run_comparison(data, entries, epsilons, args.repeats, seed=args.seed, progress=progress,
                                k=args.k, raw=args.raw)
    if not args.quiet:
        print(file=sys.stderr)
    out = Path(args.out)
    from .report.export import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "results.csv", comparison.results.to_csv(index=False), force=True)
    atomic_write_text(out / "summary.csv", comparison.summary_with_references().to_csv(index=False), force=True)
    print(comparison_table(comparison).to_string(float_format=lambda v: f"{v:,.4g}"))
    form = ("raw values (unbiased; fractional or negative as the mechanism made them)" if args.raw else
            "published form (whole numbers ≥ 0; --raw for the raw values)")
    print(f"(scored in the {form}; results.csv and summary.csv have both, the raw form as raw_*; "
          f"'{ZEROS}' and '{AVERAGE}' are references without noise: a mechanism above them publishes less than "
          f"they would. Seed {comparison.seed}; these results use the true data: internal only)")
    print(out / "results.csv")
    print(out / "summary.csv")
    return 0


def cmd_recommend(args) -> int:
    from .data.domain import HOW_DISCOVERED, DomainDeclaration, parse_items_option
    from .evaluation.recommend import recommend_for_file

    if args.items is not None and args.domains is not None:
        raise ParameterError("Give --items (incidence data) or --domains (a table of cells), not both.")
    cells = args.domains is not None or args.domains_are_public
    text = args.domains if cells else args.items
    if text is not None and text.strip().lower() == "discover":  # no δ needed: recommend_for_file explains
        declaration = DomainDeclaration(HOW_DISCOVERED, cells=cells)
    else:
        declaration = parse_items_option(text, public=args.domains_are_public if cells else args.items_are_public,
                                         cells=cells)
    advice = recommend_for_file(args.file, args.epsilon, items=declaration, bound=args.bound,
                                typical_row_length=args.typical_row_length, format=args.format,
                                import_options=_import_options(args), goal=args.goal, margins=not args.no_margins)
    from .evaluation.preview import margin_preview

    kind = "cells" if advice.situation == "cells" else "incidence"
    size = advice.declared.get("cells" if kind == "cells" else "items")
    preview = margin_preview(kind, advice.mechanism, args.epsilon, advice.params, int(size),
                             typical_row_length=args.typical_row_length, people=args.people)
    if args.json:
        print(json.dumps({**advice.to_json(), "margin_preview": preview.to_json()}, ensure_ascii=False))
        return 0
    shown = " ".join(f"{k}={v}" for k, v in advice.params.items())
    print(f"Recommended: {advice.mechanism}" + (f"  ({shown})" if shown else ""))
    print("Why:")
    for reason in advice.reasons:
        print(f"  - {reason}")
    if advice.alternatives:
        print("Also worth comparing:")
        for other in advice.alternatives:
            settings = " ".join(f"{k}={v}" for k, v in other.params.items())
            print(f"  - {other.mechanism}" + (f" ({settings})" if settings else "") + f": {other.why}")
    print(f"Margins of error: {preview.text}")
    options = "".join(f" --bound {v}" if k == "bound" else f" --param {k}={v}" for k, v in advice.params.items())
    print(f"To release it: dpdesk release {args.file} --mechanism {advice.mechanism} --epsilon {args.epsilon:g}"
          f"{options} {'--domains' if cells else '--items'} … --out DIR")
    return 0


def cmd_plan(args) -> int:
    from .privacy import planner

    index = _floats(args.index, "--index") if args.index else None
    z = planner.noise_magnitude(args.epsilon, args.probability, args.sensitivity, index)
    mta = planner.minimum_true_answer(args.epsilon, args.probability, args.relative_error, args.sensitivity, index)
    result = {"noise_magnitude": [float(v) for v in z], "minimum_true_answer": [float(v) for v in mta]}
    if args.answer is not None:
        result["epsilon_needed"] = planner.epsilon_needed(args.answer, args.probability, args.relative_error,
                                                          args.sensitivity, index)
    if args.json:
        print(json.dumps(result))
        return 0
    pr = args.probability
    for k, (zi, mi) in enumerate(zip(z, mta)):
        name = f"query {k + 1}: " if len(z) > 1 else ""
        print(f"{name}noise exceeds ±{zi:,.1f} with probability {pr:g}; "
              f"true answers of at least {mi:,.0f} stay within {args.relative_error:.0%} "
              f"with probability {1 - pr:g}")
    if "epsilon_needed" in result:
        print(f"ε needed for counts of at least {args.answer:,.0f} to be within {args.relative_error:.0%} "
              f"with probability {1 - pr:g}: {result['epsilon_needed']:.4g}")
    return 0


def cmd_ledger(args) -> int:
    from .privacy.ledger import Ledger
    from .report.export import verify_export

    if args.ledger_command == "new":
        entry = Ledger(_ledger_path()).start_new(args.reason)
        print(f"Started a new budget ledger ({entry.parameters['ledger'][:8]}…); the reason is recorded in its "
              "first entry." + (f" The old ledger was kept as {entry.parameters['replaces']['retired_file']}."
                                if (entry.parameters.get("replaces") or {}).get("retired_file") else ""))
        return 0
    ledger = Ledger.open()
    if args.ledger_command == "list":
        entries = ledger.entries(dataset=args.dataset)
        problem = ledger.verify()
        if args.json:
            print(json.dumps([e.public_dict() for e in entries], indent=2, ensure_ascii=False))
        else:
            shown = [e for e in entries if e.kind != "genesis"]
            if not shown:
                print("The ledger has no releases" + (f" for {args.dataset}" if args.dataset else "") + ".")
            for e in shown:
                if e.kind == "cap":
                    cap = "no cap" if e.cap is None else f"cap ε = {e.cap:g}"
                    print(f"#{e.id:<4} {e.time}  {e.dataset}: {cap} — {e.reason}")
                    continue
                delta = f", δ = {e.delta:.3g}" if e.delta else ""
                flags = "".join(f"  [{o} overridden]" for o in e.overrides)
                what = "stopped after using the data" if e.kind == "charged" else e.mechanism
                print(f"#{e.id:<4} {e.time}  {e.dataset} ({e.fingerprint[:12]})  {what:<12} "
                      f"ε = {e.epsilon:.4g}{delta}{flags}")
            totals = ledger.totals()
            for name, status in totals.items():
                if args.dataset and name != args.dataset:
                    continue
                cap_text = f" of cap {status.cap:g}" if status.cap is not None else " (no cap)"
                delta = f", δ = {status.delta:.3g}" if status.delta else ""
                print(f"Total for {name}: ε = {status.spent:.4g}{delta}{cap_text}")
        if problem is not None:
            print(f"dpdesk: warning: the ledger is broken at {problem}. The figures above cannot be trusted.",
                  file=sys.stderr)
        return 0
    if args.ledger_command == "verify":
        problem = ledger.verify()
        if problem is not None:
            print(f"dpdesk: the ledger is broken at {problem}", file=sys.stderr)
            return 1
        failed = 0
        for folder in args.release or []:
            mismatch = verify_export(ledger, folder)
            if mismatch is None:
                print(f"{folder}: matches the ledger")
            else:
                failed += 1
                print(f"dpdesk: {folder}: {mismatch}", file=sys.stderr)
        if failed:
            return 1
        last_id, head_hash = ledger.head()
        print(f"The ledger is intact ({last_id} entries, hash chain verified). Last entry's hash: {head_hash}")
        return 0
    if args.ledger_command == "cap":
        known = sorted({e.dataset for e in ledger.entries() if e.dataset})
        entry = ledger.set_cap(args.dataset, args.epsilon, args.reason)
        status = ledger.status(entry.dataset)
        cap = "removed" if args.epsilon is None else f"set to ε = {args.epsilon:g}"
        print(f"Cap for {entry.dataset} {cap} (spent so far: ε = {status.spent:.4g}); recorded as entry #{entry.id}.")
        if entry.dataset not in known:  # a new name, or a misspelt one that leaves the real dataset uncapped
            others = f" (names in the ledger: {', '.join(known)})" if known else ""
            print(f"dpdesk: note: nothing was recorded under the name {entry.dataset} before{others}; check the "
                  "spelling — a cap applies only to releases under exactly this name.", file=sys.stderr)
        return 0
    return EXIT_USAGE  # pragma: no cover


def _ledger_path():
    from .paths import user_data_dir
    from .privacy.ledger import LEDGER_FILE

    return user_data_dir() / LEDGER_FILE


def _cap_value(text: str) -> float | None:
    """A cap ε for ``dpdesk ledger cap``: a number, or 'none' to remove the cap."""
    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the cap must be a number (or 'none'), not '{text}'") from None


def has_display() -> bool:
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform in ("offscreen", "minimal", "vnc") or platform.startswith("offscreen"):
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


NO_DISPLAY = """dpdesk: no display found, so the desktop application cannot open a window here.
The same work can be done from the command line. On the sample dataset (its product names are a public
catalogue, so the release may list them):
  {dpdesk} inspect {sample}
  {dpdesk} recommend {sample} --epsilon 0.69 --items from-data --items-are-public --typical-row-length 4
  {dpdesk} compare {sample} --mechanisms lpa,gs --epsilon 0.1,0.69 --repeats 10 --bound 20 --out results/
  {dpdesk} release {sample} --mechanism gs --epsilon 0.69 --bound 20 --items from-data --items-are-public --out release/
On your own data, declare the list of items the release may publish with --items (see `dpdesk release --help`).
Run `dpdesk --help` for every command. The sample dataset is {sample}."""


def no_display_text(sample) -> str:
    """What `dpdesk gui` says without a display: commands that run as they are copied (the sample's own path,
    and this dpdesk's, when another or none is the `dpdesk` on the PATH)."""
    import shlex
    import shutil

    program = os.path.realpath(sys.argv[0]) if sys.argv and os.path.isfile(sys.argv[0]) else None
    found = shutil.which("dpdesk")
    if program is None or (found and os.path.realpath(found) == program):
        command = "dpdesk"
    elif program.endswith(".py"):  # python -m dpdesk.cli
        command = f"{shlex.quote(sys.executable)} -m dpdesk.cli"
    else:
        command = shlex.quote(program)
    return NO_DISPLAY.format(dpdesk=command, sample=shlex.quote(str(sample)))


def cmd_gui(args) -> int:
    from .paths import sample_path

    if not has_display():
        print(no_display_text(sample_path()), file=sys.stderr)
        return 1
    from .gui.app import run_app

    return run_app(args.file, sample=args.sample, theme=args.theme)


def cmd_sample(args) -> int:
    from .paths import copy_sample

    for path in copy_sample(Path(args.dir).absolute(), force=args.force):
        print(path)
    return 0


DESCRIPTION = """Publish differentially private counts of a sensitive dataset.
Without a command, dpdesk opens the desktop application. To try it, `dpdesk sample` copies
the bundled sample dataset (Groceries market baskets: 9,835 baskets, 169 products) into the
current folder."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpdesk", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"dpdesk {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("gui", help="open the desktop application (the default)")
    p.add_argument("file", nargs="?", help="a data file or a .dpdesk project to open")
    p.add_argument("--sample", action="store_true", help="open the bundled sample dataset")
    p.add_argument("--theme", choices=THEMES, default=None,
                   help="colours: the desktop's own (system, the default), light, dark or high-contrast "
                        "(also DPDESK_THEME)")
    p.set_defaults(func=cmd_gui)

    p = sub.add_parser("sample", help="copy the bundled sample dataset (groceries.csv.gz) into a folder")
    p.add_argument("dir", nargs="?", default=".", help="the folder to copy it into (default: the current folder)")
    p.add_argument("--force", action="store_true", help="overwrite a file of the same name")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("inspect", help="read a data file and print its (internal) figures")
    p.add_argument("file", nargs="?", help="the data file (.gz is read transparently; or give --sql and --query)")
    p.add_argument("--json", action="store_true", help="print the figures and the fingerprint as JSON")
    _add_import_arguments(p)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("mechanisms", help="list the mechanisms and their parameters")
    p.add_argument("--json", action="store_true", help="every parameter with its type, default, bounds and help")
    p.set_defaults(func=cmd_mechanisms)

    p = sub.add_parser("release", help="run one mechanism with secure randomness and write the release")
    p.add_argument("file", nargs="?", help="the data file (or give --project)")
    p.add_argument("--project", help="a .dpdesk project file (its data and chosen release)")
    p.add_argument("--mechanism", help="the mechanism id (see `dpdesk mechanisms`)")
    p.add_argument("--epsilon", type=float, help="the privacy level ε this release spends")
    p.add_argument("--bound", type=int, help="declared bound Δ: most items per person")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="a mechanism parameter (repeatable)")
    p.add_argument("--out", type=_output_folder, help="output folder (required unless --dry-run)")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything declared and show what the release would spend (and, for --items "
                        "discover, its threshold and what a stand-in expects) and the margin of error each value "
                        "would get (previewed on a stand-in), without reading the data or spending anything")
    p.add_argument("--formats", default="csv,json", help="release files: csv, json, parquet (default csv,json)")
    p.add_argument("--report", help="public privacy report formats: html, pdf (e.g. html,pdf)")
    p.add_argument("--internal-report", action="store_true", help="also write the internal (not for publication) report")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    p.add_argument("--override-cap", action="store_true", help="release even if it exceeds the dataset's budget cap (recorded)")
    p.add_argument("--chosen-how", help="how the mechanism was chosen (goes into the public report)")
    p.add_argument("--raw", action="store_true",
                   help="publish the mechanism's raw values (unbiased; may be fractional or negative) instead of "
                        "whole numbers ≥ 0")
    p.add_argument("--json", action="store_true", help="print what was done as one JSON object (for scripts)")
    p.add_argument("--dataset", help="which people the data is about: the budget ledger adds up every release "
                                     "under this name (default: the file's name without extension)")
    p.add_argument("--override-dataset-check", action="store_true",
                   help="release although this exact data was already released under another dataset name (recorded)")
    domain = p.add_argument_group("declared domain (required: the release publishes it)")
    domain.add_argument("--items", help="the items the release lists: a label FILE (one per line, or a .csv with a "
                                        "header), range:D (ids 0..D-1), from-data (with --items-are-public), or "
                                        "discover (with --delta)")
    domain.add_argument("--items-are-public", action="store_true",
                        help="state that the data file's own item labels are public (e.g. a product catalogue); "
                             "recorded in the report in those words")
    domain.add_argument("--domains", help="cell tables: a JSON FILE of attribute values "
                                          '({"attribute": ["value", …] or "range:N"}), from-data (with '
                                          "--domains-are-public), or discover (with --delta)")
    domain.add_argument("--domains-are-public", action="store_true",
                        help="state that the attribute values in the data file are public; recorded in the report")
    domain.add_argument("--delta", type=float, help="discover: the small probability δ (e.g. 1e-6) that a label held "
                                                    "by very few people is listed")
    domain.add_argument("--discover-route", choices=("one-pass", "two-step"),
                        help="discover: one-pass (lpa only: the noisy counts themselves choose the items, all of ε) "
                             "or two-step (a share of ε finds the items, the mechanism counts them); default: "
                             "chosen from the declared inputs (see --dry-run)")
    domain.add_argument("--discover-share", type=float, help="discover, two-step: the share of ε spent finding the "
                                                             "items (default: chosen; attribute values: 0.1)")
    domain.add_argument("--discover-bound", type=int, help="discover, two-step: the most items one person "
                                                           "contributes while finding them (default: chosen, at "
                                                           "most the mechanism's --bound)")
    facts = p.add_argument_group("declared facts that shape the stand-ins planning a discovery and previewing the "
                                 "margins (--dry-run; never read from the data; missing ones are assumed and said "
                                 "to be)")
    facts.add_argument("--people", type=int, help="about how many people the data holds")
    facts.add_argument("--typical-row-length", dest="typical_row_length", type=float, metavar="L",
                       help="about how many items a typical person holds (default: half of --bound)")
    facts.add_argument("--expected-items", dest="expected_items", type=int,
                       help="about how many distinct items the data holds")
    facts.add_argument("--skew", type=float, help="how unequal item popularity is: 0 all alike, 1 typical baskets "
                                                  "(the default), up to 4")
    p.add_argument("--internal-out", help="folder for the internal report (default: internal-reports/ in dpdesk's "
                                          "own folder; never the public output folder)")
    _add_import_arguments(p)
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("convert", help="convert a data file to Parquet, which large data reads much faster")
    p.add_argument("file", help="the data file (.gz is read transparently)")
    p.add_argument("out", help="the Parquet file to write (OUT.parquet)")
    _add_import_arguments(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("export", help="write a recorded release's files again from the ledger (no new noise)")
    p.add_argument("--entry", type=int, required=True, help="the release's ledger entry number (dpdesk ledger list)")
    p.add_argument("--out", required=True, type=_output_folder, help="output folder")
    p.add_argument("--formats", default="csv,json", help="release files: csv, json, parquet (default csv,json)")
    p.add_argument("--report", help="public privacy report formats: html, pdf (e.g. html,pdf)")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    p.add_argument("--raw", action="store_true",
                   help="write the raw values of a release published as whole numbers (the same noise; no budget)")
    p.add_argument("--json", action="store_true", help="print what was done as one JSON object (for scripts)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("compare", help="compare mechanisms over an ε grid on the true data (internal)")
    p.add_argument("file", help="the data file")
    p.add_argument("--mechanisms", required=True, help="comma-separated mechanism ids")
    p.add_argument("--epsilon", required=True, help="comma-separated ε values")
    p.add_argument("--repeats", type=int, default=10, help="runs of each mechanism at each ε (default 10)")
    p.add_argument("--seed", type=int, help="seed of the exploration randomness, to repeat a comparison exactly")
    p.add_argument("--bound", type=int, help="declared bound Δ: most items per person")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="a mechanism parameter (repeatable)")
    p.add_argument("--k", type=int, default=100, help="k for the top-k metrics")
    p.add_argument("--raw", action="store_true",
                   help="rank by the mechanisms' raw values instead of the published whole numbers ≥ 0 (both forms "
                        "are always in results.csv and summary.csv)")
    p.add_argument("--out", required=True, help="output folder for results.csv (every run) and summary.csv")
    p.add_argument("--quiet", action="store_true", help="do not show progress")
    _add_import_arguments(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("recommend", help="recommend a mechanism and its settings from declared facts only "
                                         "(never reads the data's content)")
    p.add_argument("file", help="the data file (only its format is read, and its labels with from-data)")
    p.add_argument("--epsilon", type=float, required=True, help="the ε you plan to spend on the release")
    p.add_argument("--bound", type=int, help="declared bound Δ: most items per person (optional)")
    p.add_argument("--typical-row-length", dest="typical_row_length", type=float, metavar="L",
                   help="your own statement of about how many items a typical person holds (optional; not read "
                        "from the data)")
    p.add_argument("--json", action="store_true", help="print one JSON object (mechanism, params, reasons, …)")
    p.add_argument("--goal", default="all",
                   help="what matters most: all (every count equally, the default), largest or largest:K (the K "
                        "largest counts; K = 100 by default), or target:N,R (counts of at least N within ±R%%)")
    p.add_argument("--no-margins", dest="no_margins", action="store_true",
                   help="also consider mechanisms that publish no margin of error (ALPA, FPA, GS-R, DPSense, "
                        "filtered or sampled cell summaries)")
    p.add_argument("--people", type=int, help="about how many people the data holds (your statement; shapes the "
                                              "stand-in of the margin preview)")
    domain = p.add_argument_group("declared domain (its size is what the recommendation needs)")
    domain.add_argument("--items", help="the items: a label FILE (one per line, or a .csv with a header), range:D "
                                        "(ids 0..D-1), or from-data (with --items-are-public)")
    domain.add_argument("--items-are-public", action="store_true",
                        help="state that the data file's own item labels are public (then only they are read)")
    domain.add_argument("--domains", help="cell tables: a JSON FILE of attribute values, or from-data (with "
                                          "--domains-are-public)")
    domain.add_argument("--domains-are-public", action="store_true",
                        help="state that the attribute values in the data file are public (then only they are read)")
    _add_import_arguments(p)
    p.set_defaults(func=cmd_recommend)

    p = sub.add_parser("plan", help="noise magnitude, minimum true answer and ε needed (Shoaran et al.)")
    p.add_argument("--epsilon", type=float, required=True, help="the privacy level ε of the noise")
    p.add_argument("--probability", type=float, required=True, help="pr: chance the noise exceeds the magnitude")
    p.add_argument("--relative-error", dest="relative_error", type=float, required=True, help="e.g. 0.1 for 10%%")
    p.add_argument("--sensitivity", type=float, default=1.0, help="the query's sensitivity (default 1)")
    p.add_argument("--index", help="query index g1,g2,... (DIFF)")
    p.add_argument("--answer", type=float, help="true answer N: print the ε needed")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("ledger", help="the privacy budget ledger")
    ledger = p.add_subparsers(dest="ledger_command", parser_class=_Parser, required=True,
                               metavar="{list,verify,cap,new}")
    q = ledger.add_parser("list", help="list releases, caps and totals")
    q.add_argument("--dataset", help="only this dataset (its declared name)")
    q.add_argument("--json", action="store_true", help="print the entries as JSON")
    q = ledger.add_parser("verify", help="check the hash chain and the head (exit 1 if broken)")
    q.add_argument("--release", nargs="+", metavar="DIR", help="also check exported release folders against the ledger")
    q = ledger.add_parser("cap", help="set a dataset's ε cap (recorded with a reason)")
    q.add_argument("dataset", help="the dataset's declared name")
    q.add_argument("epsilon", type=_cap_value, help="the most ε all releases of the dataset may spend ('none': no cap)")
    q.add_argument("--reason", required=True, help="why the cap changes (recorded in the ledger)")
    q = ledger.add_parser("new", help="start a new ledger (the old one is kept; the reason is recorded)")
    q.add_argument("--reason", required=True, help="why a new ledger is started (recorded in its first entry)")
    p.set_defaults(func=cmd_ledger)
    return parser


def safe_output_streams() -> None:
    """Make printing unable to fail on a character: a file or pipe gets UTF-8 (the encoding of
    every file dpdesk writes; Windows would otherwise use its ANSI code page, where "ε" does not
    exist), a terminal keeps its own encoding, and what it cannot show is written as an escape
    (``\\u03b5``) instead of raising. PYTHONIOENCODING, where set, keeps its encoding."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:  # no stream (pythonw), or one a caller replaced
            continue
        try:
            terminal = stream.isatty()
        except (OSError, ValueError):
            terminal = False
        try:
            if terminal or os.environ.get("PYTHONIOENCODING"):
                reconfigure(errors="backslashreplace")
            else:
                reconfigure(encoding="utf-8", errors="backslashreplace")
        except (OSError, ValueError):  # a closed stream: nothing will be printed on it anyway
            pass


@contextmanager
def _printing_after_recording(written):
    """Telling what a release did, after its ledger entry is recorded and its files are written:
    nothing here may turn that into a failure (a script would run it again and spend ε twice).
    Output that cannot be written (the reader went away, a full disk) or a ledger that cannot be
    read back for the totals is noted on stderr, and the command still succeeds."""
    try:
        yield
        sys.stdout.flush()
    except (OSError, ValueError, DpdeskError) as error:  # BrokenPipeError too; ValueError: stdout closed
        entry = (written.release.report.get("ledger") or {}).get("entry")
        try:  # what is still buffered must not fail again when Python exits
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        try:
            print(f"dpdesk: note: the release is recorded (ledger entry #{entry}) and its files are written, but "
                  f"its summary could not be printed ({error}).", file=sys.stderr)
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    safe_output_streams()
    parser = build_parser()
    if not argv:
        argv = ["gui"]
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # the reader of our output went away (`… | head`): the work itself is done (a release is
        # recorded and written), so no failure status that would make a script run it again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except DpdeskError as error:
        print(f"dpdesk: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("dpdesk: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("dpdesk: error: not enough memory for this dataset", file=sys.stderr)
        return 1
    except (ImportError, OSError) as error:
        message = missing_library_message(error)
        if message is None:
            raise
        print(f"dpdesk: error: {message}", file=sys.stderr)
        return 1


def missing_library_message(error: BaseException) -> str | None:
    """One line for a shared library the machine lacks (Qt loading libGL.so.1, say), else None."""
    text = str(error)
    if "cannot open shared object file" not in text and "GLIBC" not in text:
        return None
    from .hostlibs import package_for

    library = text.split(":")[0].strip()
    package = package_for(library)
    if "GLIBC" in text:
        return f"this machine's C library is too old for a part of dpdesk ({text.strip()})."
    if package:
        return f"the system library {library} is missing; install the Debian/Ubuntu package {package} (as root: apt-get install {package})."
    return f"the system library {library} is missing ({text.strip()})."


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
