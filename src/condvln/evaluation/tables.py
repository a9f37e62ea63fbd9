"""The paper's result tables from per-episode records, for one run or several side by side.

* :func:`table2` — paper Table 2: one row per run, a column group per source dataset with SR,
  SPL, CondVLN's BSA_branch and CSR_all, then the paper's BSA and CSR headed "BSA (paper)" and
  "CSR (paper)" (see :mod:`.metrics` and :data:`PAPER_METRICS_LEGEND`; plus an "all" group
  when there are several sources), a "seen phrasing" and an "unseen phrasing" group when some
  episodes are worded with held-out paraphrases (``phrasing_seen``), and a diagnostics group:
  branch accuracy (BA, ended nearest the gold leaf goal) and its chance level, success at any
  branch goal (SR-any), the wrong-branch rate (WB) and the share of all episodes in each failure
  category;
* :func:`table3` — paper Table 3: BSA_branch and CSR_all (then the paper's BSA and CSR) at the
  base case d=1, ℓ=1, the logical-depth sweep (d=2 and d=3 at ℓ=1) and the chain-length sweep
  (ℓ=2 and ℓ=3 at d=1); per source dataset (plus "all") when there are several sources;
* :func:`coverage_table` — episodes per source dataset and Table-1 category / spatial
  composition, so a source that cannot have a category (a single room has no cross-room
  condition) shows it as empty.

A run is a name and its per-episode records (the lines of ``episodes.jsonl``). Cells are
percentages of the mean over the episodes with a value (``None`` values, e.g. the BSA of an
excluded episode, are left out, as in :mod:`.aggregate`); a cell without any value is empty.
Render with :meth:`ResultTable.to_markdown`, :meth:`ResultTable.to_csv` or
:meth:`ResultTable.to_rich`.

>>> recs = [{"source_dataset": "procedural", "depth": 1, "chain": 1, "success": 1, "spl": 0.5,
...          "bsa": 1.0, "csr": 1, "bsa_branch": 0.5, "csr_all": 1, "wrong_branch": False,
...          "failure_category": None}]
>>> t = table2({"oracle": recs, "blind": []})
>>> t.columns[:6]
['procedural SR', 'procedural SPL', 'procedural BSA_branch', 'procedural CSR_all', 'procedural BSA (paper)', 'procedural CSR (paper)']
>>> t.rows[0].values[:6], t.rows[1].values[:4]
((100.0, 50.0, 50.0, 100.0, 100.0, 100.0), (None, None, None, None))
>>> print(table3({"oracle": recs}).to_markdown().splitlines()[4])
| oracle | 1 | 50.00 | 100.00 | 100.00 | 100.00 | – | – | – | – | – | – | – | – | – | – | – | – | – | – | – | – |
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from condvln.evaluation.aggregate import weighted_mean
from condvln.evaluation.diagnostics import FailureCategory
from condvln.synth.workload import mean_gaps

Record = Mapping[str, Any]
Runs = Mapping[str, Sequence[Record]] | Sequence[tuple[str, Sequence[Record]]]
Selector = Callable[[Record], bool]

COLUMN_KEYS = {
    "SR": "success",
    "SPL": "spl",
    "BSA_branch": "bsa_branch",
    "CSR_all": "csr_all",
    "BSA (paper)": "bsa",
    "CSR (paper)": "csr",
    "WB": "wrong_branch",
    "BA": "branch_correct",
    "chance": "branch_chance",
    "SR-any": "reached_branch_goal",
    "fault": "agent_fault",
}
"""Column label → per-episode record key."""

DIAGNOSTIC_COLUMNS = ("BA", "chance", "SR-any", "WB", "fault")
"""Branch accuracy (ended nearest the gold leaf goal), its chance level, success at any branch
goal (plausible navigation), the wrong-branch rate and the share of episodes the agent failed
(``agent_error`` / ``invalid_action`` / ``timeout``; "–" when the predictions do not say)."""

FAILURE_CATEGORIES: tuple[str, ...] = get_args(FailureCategory)
"""Failure categories, in :func:`~.diagnostics.failure_category` rule order."""

SOURCE_COLUMNS: tuple[str, ...] = (
    "SR",
    "SPL",
    "BSA_branch",
    "CSR_all",
    "BSA (paper)",
    "CSR (paper)",
)
"""Columns of every source group of Table 2 (keys in :data:`COLUMN_KEYS`)."""

PHRASING_GROUPS = (("seen phrasing", True), ("unseen phrasing", False))
"""Table 2's phrasing groups: episodes worded with seen paraphrases only, and those using a
held-out one (``phrasing_seen``)."""


SCALING_COLUMNS: tuple[str, ...] = ("BSA_branch", "CSR_all", "BSA (paper)", "CSR (paper)")
"""Columns of every depth / chain cell of Table 3 (keys in :data:`COLUMN_KEYS`)."""

PAPER_METRICS_LEGEND = (
    "BSA (paper) and CSR (paper) can exceed SR: the paper's BSA counts the gold path's "
    "waypoints before the first decision, which a wrong-branch episode reaches too, and both "
    "leave out failed episodes without subgoals (CSR is 1 only on success, but over fewer "
    "episodes); BSA_branch and CSR_all count every episode, and CSR_all ≤ SR"
)
"""Legend line of Tables 2 and 3 (see :mod:`.metrics`)."""

SCALING_CELLS = (
    ("base", 1, 1),
    ("depth", 2, 1),
    ("depth", 3, 1),
    ("chain", 1, 2),
    ("chain", 1, 3),
)
"""Table 3 column groups: (sweep, depth d, chain length ℓ)."""


WORKLOAD_LEGEND = "Gold-path workload per cell (mean targets / mean reference length)"
"""Start of Table 3's workload line (:func:`workload_legend`)."""


def workload_legend(records: Sequence[Record], source: str = "") -> str:
    """Table 3's workload line: per depth / chain cell, the episodes' mean targets on the gold
    path (subgoals and goal) and mean reference-path length, and the largest gaps between two
    cells, so a reader sees whether the columns differ in their logic only (issue 26). Episodes
    are counted once however many runs scored them, so ``records`` hold one source dataset
    (episode ids are unique within one), named by ``source`` when given.

    >>> recs = [{"episode_id": 1, "depth": 1, "chain": 1, "subgoals_total": 1,
    ...          "reference_path_length": 10.0},
    ...         {"episode_id": 2, "depth": 2, "chain": 1, "subgoals_total": 1,
    ...          "reference_path_length": 10.5}]
    >>> workload_legend(recs)
    'Gold-path workload per cell (mean targets / mean reference length): d=1,ℓ=1 2.00 / 10.0 m, d=2,ℓ=1 2.00 / 10.5 m; largest gaps 0.00 targets and 5.0 %'
    """
    episodes = {r.get("episode_id"): r for r in records}.values()
    cells = []
    for _, depth, chain in SCALING_CELLS:
        chosen = [r for r in episodes if r.get("depth") == depth and r.get("chain") == chain]
        lengths = [r["reference_path_length"] for r in chosen if r.get("reference_path_length")]
        if chosen and lengths:
            targets = sum(r.get("subgoals_total", 0) + 1 for r in chosen) / len(chosen)
            cells.append((f"d={depth},ℓ={chain}", targets, sum(lengths) / len(lengths)))
    if not cells:
        return ""
    shown = ", ".join(f"{name} {t:.2f} / {m:.1f} m" for name, t, m in cells)
    gaps = mean_gaps((t, m) for _, t, m in cells)
    return (
        f"{WORKLOAD_LEGEND}{f', {source}' if source else ''}: {shown}; "
        f"largest gaps {gaps['targets']:.2f} targets and {100 * gaps['length']:.1f} %"
    )


@dataclass(frozen=True)
class Row:
    """One run: its name, its episode count and one value per column (percent or ``None``)."""

    name: str
    n: int
    values: tuple[float | None, ...]


NDTW_LEGEND = "nDTW: exact DTW (VLN-CE `FDTW=False`)"
"""Legend line of every table and of ``metrics.json``: how nDTW is computed."""


def spl_legend(gt_replay_spl: float | None) -> str:
    """Legend line of SPL: what a perfect ``_gt`` replay scores on the split.

    >>> spl_legend(0.6812)
    'SPL of a perfect _gt replay: 0.681 (ℓ = start → goal geodesic, as VLN-CE; the subgoals lengthen the path)'
    """
    shown = "–" if gt_replay_spl is None else f"{gt_replay_spl:.3f}"
    return (
        f"SPL of a perfect _gt replay: {shown} "
        "(ℓ = start → goal geodesic, as VLN-CE; the subgoals lengthen the path)"
    )


@dataclass(frozen=True)
class ResultTable:
    """A table with grouped columns.

    Attributes:
        title: caption.
        groups: ``(group label, column labels)`` in order.
        rows: one :class:`Row` per run.
        decimals: decimals shown in Markdown and rich output.
        note: a second caption line (e.g. how nDTW was computed), empty for none.
        legend: lines below the table (what its columns mean), empty for none.
        workload: Table 3's workload lines (:func:`workload_legend`, one per source
            dataset), empty for none; they follow the legend wherever the legend is shown.
    """

    title: str
    groups: tuple[tuple[str, tuple[str, ...]], ...]
    rows: tuple[Row, ...]
    decimals: int
    note: str = ""
    legend: str = ""
    workload: str = ""

    @property
    def captions(self) -> list[str]:
        """The lines below the table: the legend's, then the workload lines."""
        return [*self.legend.splitlines(), *self.workload.splitlines()]

    @property
    def columns(self) -> list[str]:
        """Flat column names ``"<group> <column>"``."""
        return [f"{group} {column}" for group, columns in self.groups for column in columns]

    def _cell(self, value: float | None) -> str:
        return "–" if value is None else f"{value:.{self.decimals}f}"

    def to_markdown(self) -> str:
        """GitHub Markdown: a caption line, then the table, then the legend lines (if any)."""
        header = ["Model", "N", *self.columns]
        lines = [
            f"**{self.title}**",
            *([f"_{self.note}_"] if self.note else []),
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join(["---", "---:"] + ["---:"] * len(self.columns)) + "|",
        ]
        for row in self.rows:
            cells = [row.name, str(row.n), *map(self._cell, row.values)]
            lines.append("| " + " | ".join(cells) + " |")
        for line in self.captions:
            lines += ["", line]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """CSV with one header row (``model, n, <group> <column>, …``); values in percent."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["model", "n", *self.columns])
        for row in self.rows:
            values = ["" if v is None else f"{v:.6f}" for v in row.values]
            writer.writerow([row.name, row.n, *values])
        return buffer.getvalue()

    def to_terminal(self, wanted: Mapping[str, str], title: str) -> Table:
        """A narrow rich table of selected columns under short labels (fits 80 columns).

        Keys of ``wanted`` are full column names, or bare metric names looked up in the first
        source group ("all" when there are several sources); values are the labels shown.
        """
        first = next((g for g, _ in self.groups if g == "all"), self.groups[0][0])
        names = [k if k in self.columns else f"{first} {k}" for k in wanted]
        table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column("run", no_wrap=True)
        for label in wanted.values():
            table.add_column(label, justify="right", no_wrap=True)
        for row in self.rows:
            values = dict(zip(self.columns, row.values, strict=True))
            table.add_row(
                row.name, *(f"{values[n]:.1f}" if values.get(n) is not None else "–" for n in names)
            )
        return table

    def to_terminal_by_source(
        self, sources: Sequence[str], wanted: Mapping[str, str], title: str
    ) -> Table:
        """A narrow rich table with one line per run and source group.

        Column ``"<source> <key>"`` of each source in ``sources`` is shown under the label
        ``wanted[key]``; a column the table lacks is "–".
        """
        table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column("run", no_wrap=True)
        table.add_column("source", no_wrap=True)
        for label in wanted.values():
            table.add_column(label, justify="right", no_wrap=True)
        for row in self.rows:
            values = dict(zip(self.columns, row.values, strict=True))
            for i, source in enumerate(sources):
                cells = [values.get(f"{source} {key}") for key in wanted]
                table.add_row(
                    row.name if i == 0 else "",
                    source,
                    *("–" if v is None else f"{v:.1f}" for v in cells),
                    end_section=i == len(sources) - 1,
                )
        return table

    def to_rich(self) -> Table:
        """A rich table (group label above each column label)."""
        caption = "\n".join(line for line in (self.note, *self.captions) if line)
        table = Table(title=self.title, caption=caption or None)
        table.add_column("Model")
        table.add_column("N", justify="right")
        for group, columns in self.groups:
            for column in columns:
                table.add_column(f"{group}\n{column}", justify="right")
        for row in self.rows:
            table.add_row(row.name, str(row.n), *map(self._cell, row.values))
        return table


TABLE2_TERMINAL = {
    "SR": "SR",
    "SPL": "SPL",
    "BSA_branch": "BSAb",
    "CSR_all": "CSRa",
    "BSA (paper)": "BSAp",
    "CSR (paper)": "CSRp",
    "diagnostics BA": "BA",
    "diagnostics chance": "1/n",
    "diagnostics WB": "WB",
    "diagnostics fault": "err",
}
"""Table 2 columns shown in a terminal, with their short labels (legend: :data:`TABLE2_LEGEND`;
SR-any stays in the files)."""

TABLE2_LEGEND = (
    "BSAb: BSA_branch (the gold arm's in-branch subgoals reached in order, then its goal by "
    "succeeding; every episode); CSRa: "
    "CSR_all (CSR over every episode); BSAp / CSRp: the paper's BSA / CSR; BA: branch "
    "accuracy (ended nearest the gold branch goal); 1/n: chance; WB: stopped at a wrong "
    "branch's goal; err: episodes the agent failed (error, invalid action, timeout); SR-any is "
    "in table2.md\n" + PAPER_METRICS_LEGEND
)

TABLE3_TERMINAL_ALL = {
    "base d=1,ℓ=1 CSR_all": "d1 ℓ1",
    "depth d=2,ℓ=1 CSR_all": "d2 ℓ1",
    "depth d=3,ℓ=1 CSR_all": "d3 ℓ1",
    "chain d=1,ℓ=2 CSR_all": "d1 ℓ2",
    "chain d=1,ℓ=3 CSR_all": "d1 ℓ3",
}
"""Table 3 columns shown in a terminal (CSR_all by depth d and chain ℓ; BSA_branch stays in
the files)."""

TABLE3_TERMINAL = {k.replace(" CSR_all", " CSR (paper)"): v for k, v in TABLE3_TERMINAL_ALL.items()}
"""The same cells for the paper's CSR (its BSA stays in the files)."""


TABLE3_NOTE = (
    "full tables (all columns, BSA_branch and BSA (paper) by d and ℓ): table2.md / table3.md "
    "(+ .csv)"
)


TABLE2_PHRASING_TERMINAL = {
    f"{group} {column}": f"{label} {'seen' if seen else 'new'}"
    for column, label in (("SR", "SR"), ("CSR_all", "CSRa"))
    for group, seen in PHRASING_GROUPS
}
"""Table 2's phrasing groups in a terminal: SR and CSR_all over the episodes worded with seen
paraphrases ("seen") and with a held-out one ("new"); SPL and the rest are in the files."""


def terminal_tables(table_2: ResultTable, table_3: ResultTable) -> list[RenderableType]:
    """Tables 2 and 3 for an 80-column terminal, with the legend; the full ones are in files.

    With several source datasets, both show one line per run and source group (the sources,
    then "all"), and Table 2's diagnostics (over all episodes) follow as a table of their own.
    With phrasing groups, a narrow table of them follows Table 2.
    """
    phrasing = {label for label, _ in PHRASING_GROUPS}
    groups = [group for group, _ in table_2.groups if group != "diagnostics"]
    sources = [group for group in groups if group not in phrasing]
    by_phrasing = (
        [
            table_2.to_terminal(
                TABLE2_PHRASING_TERMINAL, "Table 2 by phrasing (%; new: held-out paraphrases)"
            )
        ]
        if phrasing & set(groups)
        else []
    )
    if len(sources) > 1:
        diagnostics = {k: v for k, v in TABLE2_TERMINAL.items() if k.startswith("diagnostics ")}
        columns = dict(table_2.groups)[sources[0]]
        return [
            table_2.to_terminal_by_source(
                sources,
                {c: TABLE2_TERMINAL.get(c, c) for c in columns},
                "Table 2: main results per source (%)",
            ),
            table_2.to_terminal(diagnostics, "Table 2 diagnostics, all episodes (%)"),
            *by_phrasing,
            Text(TABLE2_LEGEND),
            table_3.to_terminal_by_source(
                sources, TABLE3_TERMINAL_ALL, "Table 3: CSR_all by depth d and chain ℓ (%)"
            ),
            table_3.to_terminal_by_source(
                sources,
                TABLE3_TERMINAL,
                "Table 3: CSR (paper) by depth d and chain ℓ per source (%)",
            ),
            Text(TABLE3_NOTE),
            *_workload_lines(table_3),
        ]
    return [
        table_2.to_terminal(TABLE2_TERMINAL, "Table 2: main results (%)"),
        *by_phrasing,
        Text(TABLE2_LEGEND),
        table_3.to_terminal(TABLE3_TERMINAL_ALL, "Table 3: CSR_all by depth d and chain ℓ (%)"),
        table_3.to_terminal(TABLE3_TERMINAL, "Table 3: CSR (paper) by depth d and chain ℓ (%)"),
        Text(TABLE3_NOTE),
        *_workload_lines(table_3),
    ]


def _workload_lines(table_3: ResultTable) -> list[Text]:
    """Table 3's workload lines, for the terminal (the other legend is Table 2's)."""
    return [Text(table_3.workload)] if table_3.workload else []


def _runs(runs: Runs) -> list[tuple[str, Sequence[Record]]]:
    return list(runs.items()) if isinstance(runs, Mapping) else list(runs)


def percent_mean(records: Sequence[Record], key: str) -> float | None:
    """100 × the mean of ``key`` over the records where it is not ``None`` (``None`` if none).

    >>> percent_mean([{"csr": 1}, {"csr": None}, {"csr": 0}, {}], "csr")
    50.0
    """
    values = [float(r[key]) for r in records if r.get(key) is not None]
    mean = weighted_mean(values)
    return None if mean is None else 100.0 * mean


def failure_shares(records: Sequence[Record]) -> tuple[float | None, ...]:
    """Percent of all episodes in each of :data:`FAILURE_CATEGORIES` (``None`` without episodes).

    >>> failure_shares([{"failure_category": "wrong_branch"}, {"failure_category": None}])
    (0.0, 0.0, 50.0, 0.0, 0.0)
    """
    if not records:
        return (None,) * len(FAILURE_CATEGORIES)
    n = len(records)
    return tuple(
        100.0 * sum(r.get("failure_category") == c for r in records) / n for c in FAILURE_CATEGORIES
    )


def _group_values(
    records: Sequence[Record], select: Selector, labels: Sequence[str]
) -> list[float | None]:
    chosen = [r for r in records if select(r)]
    return [percent_mean(chosen, COLUMN_KEYS[label]) for label in labels]


def _build(
    title: str,
    runs: Runs,
    groups: Sequence[tuple[str, Selector, tuple[str, ...]]],
    decimals: int,
    diagnostics: bool,
) -> ResultTable:
    rows = []
    for name, records in _runs(runs):
        values = [v for _, select, labels in groups for v in _group_values(records, select, labels)]
        if diagnostics:
            values += [percent_mean(records, COLUMN_KEYS[c]) for c in DIAGNOSTIC_COLUMNS]
            values += failure_shares(records)
        rows.append(Row(name, len(records), tuple(values)))
    header = tuple((label, labels) for label, _, labels in groups)
    if diagnostics:
        header += (("diagnostics", (*DIAGNOSTIC_COLUMNS, *FAILURE_CATEGORIES)),)
    return ResultTable(title, header, tuple(rows), decimals, legend=PAPER_METRICS_LEGEND)


def _is(key: str, value: Any) -> Selector:
    return lambda record: record.get(key) == value


def table2(
    runs: Runs, *, diagnostics: bool = True, source_key: str = "source_dataset"
) -> ResultTable:
    """Paper Table 2: SR, SPL, BSA_branch, CSR_all, BSA (paper), CSR (paper) per source, one row
    per run, with :data:`PAPER_METRICS_LEGEND` as legend.

    Args:
        runs: ``{name: records}`` or ``[(name, records), …]``, in row order.
        diagnostics: append the wrong-branch rate and failure-category shares (all episodes).
        source_key: record key of the source dataset.

    Returns:
        The table; sources are the union over runs, sorted; an ``all`` group follows when
        there are several, then the :data:`PHRASING_GROUPS` when some episode uses a held-out
        paraphrase.
    """
    selectors = [*_source_selectors(runs, source_key), *_phrasing_selectors(runs)]
    groups = [(label, select, SOURCE_COLUMNS) for label, select in selectors]
    title = "Table 2: main results per source dataset (%)"
    return _build(title, runs, groups, 1, diagnostics)


def _source_selectors(runs: Runs, source_key: str) -> list[tuple[str, Selector]]:
    """(source, selector) per source in the records, sorted, then ``("all", …)`` if several."""
    sources = sorted({str(r.get(source_key)) for _, recs in _runs(runs) for r in recs})
    chosen: list[tuple[str, Selector]] = [
        (s, (lambda r, s=s: str(r.get(source_key)) == s)) for s in sources
    ]
    if len(sources) > 1:
        chosen.append(("all", lambda r: True))
    return chosen


def _phrasing_selectors(runs: Runs) -> list[tuple[str, Selector]]:
    """The :data:`PHRASING_GROUPS`, when some episode uses a held-out paraphrase.

    >>> [label for label, _ in _phrasing_selectors({"a": [{"phrasing_seen": False}]})]
    ['seen phrasing', 'unseen phrasing']
    >>> _phrasing_selectors({"a": [{"phrasing_seen": True}, {}]})
    []
    """
    records = (r for _, recs in _runs(runs) for r in recs)
    if not any(r.get("phrasing_seen") is False for r in records):
        return []
    return [(label, _is("phrasing_seen", value)) for label, value in PHRASING_GROUPS]


def table3(
    runs: Runs, *, diagnostics: bool = False, source_key: str = "source_dataset"
) -> ResultTable:
    """Paper Table 3: BSA_branch, CSR_all, BSA (paper), CSR (paper) over the depth and chain
    sweeps, with :data:`PAPER_METRICS_LEGEND` and the cells' :func:`workload_legend` (one line
    per source dataset) as legend.

    Args:
        runs: ``{name: records}`` or ``[(name, records), …]``, in row order.
        diagnostics: append the wrong-branch rate and failure-category shares (all episodes).
        source_key: record key of the source dataset.

    Returns:
        The table: groups ``base d=1,ℓ=1``, ``depth d=2,ℓ=1``, ``depth d=3,ℓ=1``,
        ``chain d=1,ℓ=2``, ``chain d=1,ℓ=3``, each with :data:`SCALING_COLUMNS`.
        With several sources every group is repeated per source and for all episodes, named
        ``"<source> <group>"`` (``"ithor base d=1,ℓ=1"``, …, ``"all chain d=1,ℓ=3"``).
    """
    sources = _source_selectors(runs, source_key)
    groups = [
        (
            f"{source} {sweep} d={d},ℓ={ell}" if len(sources) > 1 else f"{sweep} d={d},ℓ={ell}",
            (
                lambda r, d=d, ell=ell, select=select: (
                    select(r) and _is("depth", d)(r) and _is("chain", ell)(r)
                )
            ),
            SCALING_COLUMNS,
        )
        for source, select in sources
        for sweep, d, ell in SCALING_CELLS
    ]
    title = "Table 3: scaling with logical depth d and chain length ℓ (%)"
    table = _build(title, runs, groups, 2, diagnostics)
    records = [r for _, recs in _runs(runs) for r in recs]
    lines = (
        workload_legend([r for r in records if select(r)], source if len(sources) > 1 else "")
        for source, select in sources
        if source != "all"
    )
    return dataclasses.replace(table, workload="\n".join(filter(None, lines)))


def coverage_table(
    records: Sequence[Record],
    categories: Sequence[str],
    compositions: Sequence[str],
    *,
    source_key: str = "source_dataset",
) -> ResultTable:
    """Episodes per source dataset (rows) and Table-1 category / spatial composition (columns).

    A cell without episodes is ``None`` (shown "–"), so a category a source cannot have is
    visible at a glance; the ``N`` column is the source's episode count.

    >>> recs = [{"source_dataset": "ithor", "category": "simple", "composition": "relation"}]
    >>> t = coverage_table(recs, ["simple", "nested"], ["in_room", "relation"])
    >>> t.columns, t.rows[0].values
    (['category simple', 'category nested', 'composition in_room', 'composition relation'], (1.0, None, None, 1.0))
    """
    sources = sorted({str(r.get(source_key)) for r in records})
    rows = []
    for source in sources:
        chosen = [r for r in records if str(r.get(source_key)) == source]
        values = [
            float(sum(r.get(key) == value for r in chosen)) or None
            for key, wanted in (("category", categories), ("composition", compositions))
            for value in wanted
        ]
        rows.append(Row(source, len(chosen), tuple(values)))
    groups = (("category", tuple(categories)), ("composition", tuple(compositions)))
    return ResultTable("Episodes per source dataset", groups, tuple(rows), 0)


def coverage_terminal(table: ResultTable) -> Table:
    """:func:`coverage_table` for an 80-column terminal, transposed: one line per category or
    composition, one column per source (episode counts, "–" for none)."""
    out = Table(title=table.title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    out.add_column("", no_wrap=True)
    for row in table.rows:
        out.add_column(row.name, justify="right", no_wrap=True)
    out.add_row("episodes", *(str(row.n) for row in table.rows), end_section=True)
    for i, column in enumerate(table.columns):
        cells = ("–" if row.values[i] is None else f"{row.values[i]:.0f}" for row in table.rows)
        out.add_row(column, *cells)
    return out
