"""``--format html``: one self-contained page (no network needed to view it: inline CSS, charts as
embedded PNG, a Content-Security-Policy that forbids loading anything).

It shows the findings with their status, code excerpt, evidence and fix and, when the command put
them in ``Report.extra``, the probe's and the diff's data. The keys read here, all optional, all
plain JSON (the probe and the diff emit them; anything malformed is skipped with a note):

``extra["parameter_gradients"]``: one entry per parameter, in ``model.named_parameters()``
order, from the last backward the probe recorded (``auditor.probe.charts``)::

    [{"name": "encoder.layers.0.fc.weight",  # parameter name
      "norm": 0.034,                          # gradient norm (null when None or non-finite)
      "state": "finite",                      # finite | zero | none | nonfinite
      "unreached": false, "step": 12}, ...]   # used in the forward, not reached by the loss

``extra["reconstruction"]``: a few masked nodes' points, target against what the model
reconstructed, row for row (xyz, or xy); or ``{"unreadable": "why"}`` when the probe found no
output it could read as points (the page says why)::

    {"target": [[x, y, z], ...], "predicted": [[x, y, z], ...],
     "node": [0, 0, ..., 1, ...],             # optional: which masked node each point belongs to
     "step": 12, "module": "decoder", "masked": true}   # optional: where the sample comes from

``extra["run"]``: the probe's run facts (a diff's when interrupted); a run that ``stopped`` as
crash, timeout, interrupted or error (or exited non-zero) gets a banner with
``extra["output_tail"]``, the program's last output lines.

``extra["stages"]`` and ``extra["first_divergence"]``: the diff's JSON (DESIGN section 6)::

    [{"stage": "init", "status": "same|differs|missing", "items": [...]}, ...]
    {"stage": "init", "name": "...", "detail": "...", "rule": "GM601", "path": "...", "line": 88}

Items are shown as they come: an object's ``name`` and ``detail`` when it has them, else its JSON.
``first_divergence["cause"]``, when present: why that line is the cause.

``extra["outcome"]`` (``gm-audit diff --outcome``, ``auditor/diff/outcome.py``): per run
(``"reference"``, ``"candidate"``) its figures, point spreads, the per-entity coordinate errors and
a sample to draw; the comparison and the verdict::

    {"steps": 200, "verdict": "worse — ...", "notes": ["..."],
     "reference": {"figures": [{"key": "coord_error", "label": "...", "mean": 0.41, "se": 0.02,
                                "count": 181, "higher_is_better": false}, ...],
                   "spread": {"target": 1.1, "predicted": 0.9}, "entities": 181,
                   "steps": [198, 199, 200, 201], "coord_errors": [0.3, ...],
                   "sample": {"target": [[x, y, z], ...], "predicted": [...], "node": [...]}},
     "candidate": {...},
     "comparison": {"z": 3.0, "verdict": "worse|better|same",
                    "rows": [{"label": "...", "reference": 0.41, "candidate": 0.63,
                              "reference_se": 0.02, "candidate_se": 0.03, "change": 0.22,
                              "tolerance": 0.11, "status": "worse|better|same"}, ...]}}

The charts need matplotlib (``pip install 'gm-audit[html]'``); without it the page says so and
shows the same data as tables.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
import sys
from collections import Counter
from typing import Any, Optional

from auditor import __version__
from auditor.findings import Finding
from auditor.probe.charts import point_error, too_short_text
from auditor.reports import Report, failed_run, no_divergence, source_lines
from auditor.reports.safe_text import printable

STATUS_ORDER = ("confirmed", "runtime", "static", "unexercised", "untaken", "outside", "refuted")
CONTEXT = 2
MAX_EXCERPT = 12
MAX_ITEMS = 8  # diff items shown per stage
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#fff; --soft:#f6f8fa; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1180px; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 19px; border-bottom: 1px solid var(--line);
     padding-bottom: 4px; margin-top: 32px; } h3 { font-size: 15px; margin: 0 0 6px; }
.muted { color: var(--muted); } code, pre { font: 12.5px/1.45 ui-monospace, Menlo, Consolas, monospace; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 5px 8px;
        border-bottom: 1px solid var(--line); vertical-align: top; } th { background: var(--soft); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px;
         font-weight: 600; color: #fff; white-space: nowrap; }
.confirmed { background: #cf222e; } .runtime { background: #8250df; } .static { background: #0969da; }
.unexercised, .untaken, .outside { background: #6e7781; } .refuted { background: #1a7f37; }
.error { background: #a40e26; } .warning { background: #bc4c00; } .info { background: #0550ae; }
.same { background: #1a7f37; } .differs { background: #cf222e; } .missing { background: #9a6700; }
.worse { background: #cf222e; } .better { background: #1a7f37; }
.counts span { margin-right: 12px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
.card.confirmed-card, .card.runtime-card { border-left: 4px solid #cf222e; }
pre.code { background: var(--soft); padding: 8px 0; overflow-x: auto; border-radius: 6px; }
pre.code span { display: block; padding: 0 12px; } pre.code .hit { background: #fff1c2; }
pre.code .ln { color: var(--muted); display: inline; padding: 0 12px 0 0; user-select: none; }
.note { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; }
figure { margin: 12px 0; } figure img { max-width: 100%; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 13px; } tr.first td { background: #ffebe9; }
"""


def esc(value: Any) -> str:
    # controls and a non-UTF-8 name's bytes shown escaped (a report read with `cat` on a terminal
    # must not act on them; lone surrogates would not even encode)
    return html.escape(printable(str(value), limit=sys.maxsize, multiline=True), quote=True)


def prose(text: str) -> str:
    """Escaped text whose `code spans` (the messages' Markdown habit) become <code>."""
    parts = re.split(r"(`[^`]+`)", str(text))
    return "".join(f"<code>{esc(p[1:-1])}</code>" if p.startswith("`") and p.endswith("`")
                   and len(p) > 2 else esc(p) for p in parts)


def _number(value: Any) -> Optional[float]:
    """A float from JSON, or None for null / non-numbers (never raises)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# -- data from Report.extra -------------------------------------------------------------------------


def gradient_rows(extra: dict[str, Any]) -> list[dict[str, Any]]:
    """``extra["parameter_gradients"]`` normalised: name, norm, state (ok|zero|none|nonfinite),
    unreached."""
    rows = []
    for entry in extra.get("parameter_gradients") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        norm = _number(entry.get("norm"))
        if entry.get("state") == "nonfinite" or (norm is not None and not math.isfinite(norm)):
            state = "nonfinite"
        elif entry.get("state") == "none" or norm is None:
            state = "none"
        elif norm == 0:
            state = "zero"
        else:
            state = "ok"
        rows.append({"name": entry["name"], "norm": norm, "state": state,
                     "unreached": bool(entry.get("unreached"))})
    return rows


def reconstruction_points(extra: dict[str, Any]) -> Optional[tuple[list, list, list]]:
    """``extra["reconstruction"]`` as (target, predicted, node) with equal lengths, or None."""
    data = extra.get("reconstruction")
    if not isinstance(data, dict) or "unreadable" in data:
        return None
    target, predicted = data.get("target"), data.get("predicted")
    if not isinstance(target, list) or not isinstance(predicted, list):
        return None
    pairs = []
    for t, p in zip(target, predicted):
        if (isinstance(t, list) and isinstance(p, list) and len(t) == len(p) and len(t) in (2, 3)
                and all(_number(v) is not None and math.isfinite(v) for v in [*t, *p])):
            pairs.append((t, p))
    if not pairs:
        return None
    dim = len(pairs[0][0])
    pairs = [(t, p) for t, p in pairs if len(t) == dim]
    nodes = data.get("node") if isinstance(data.get("node"), list) else []
    node = [nodes[i] if i < len(nodes) else 0 for i in range(len(pairs))]
    return [t for t, _ in pairs], [p for _, p in pairs], node


# -- charts -----------------------------------------------------------------------------------------


def load_figure_class() -> Any:
    """matplotlib's ``Figure`` (drawn without pyplot: no global state, no GUI backend), or None."""
    try:
        import matplotlib  # noqa: F401  (the optional `html` extra)
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def gradient_chart(Figure: Any, rows: list[dict[str, Any]]) -> str:
    """The classic gradient-flow view: the gradient norm per parameter, log scale, blocked ones
    (None, zero, non-finite) marked in red under the axis."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    n = len(rows)
    fig = Figure(figsize=(min(18.0, max(8.0, 0.32 * n)), 5.2))
    ax = fig.add_subplot()
    positive = [r["norm"] for r in rows if r["state"] == "ok"]
    floor = min(positive) / 10 if positive else 1e-8
    ok = [i for i, r in enumerate(rows) if r["state"] == "ok"]
    ax.bar(ok, [rows[i]["norm"] for i in ok], color="#08519c", width=0.7, label="‖grad‖")
    blocked = [i for i, r in enumerate(rows) if r["state"] != "ok"]
    if blocked:
        ax.scatter(blocked, [floor] * len(blocked), marker="x", s=60, color="#d62728", zorder=3,
                   label="no gradient (None / zero / non-finite)")
    ax.set_yscale("log")
    # plain "1e-04" labels: matplotlib's default log labels go through its (slow) mathtext parser
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0e}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(bottom=floor / 2)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xticks(range(n))
    ax.set_xticklabels([r["name"] for r in rows], rotation=90,
                       fontsize=8 if n <= 40 else 6)
    for label, r in zip(ax.get_xticklabels(), rows):
        if r["state"] != "ok":
            label.set_color("#d62728")
    ax.set_ylabel("|gradient| (log)")
    ax.set_title("Gradient flow at the last recorded backward")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return png(fig)


def reconstruction_chart(Figure: Any, target: list, predicted: list, node: list) -> str:
    """Target vs reconstructed points, lines joining each pair: 3D view plus the xy projection."""
    dim = len(target[0])
    fig = Figure(figsize=(12.0, 5.2) if dim == 3 else (6.5, 5.2))
    panels = []
    if dim == 3:
        import mpl_toolkits.mplot3d  # noqa: F401  (registers the 3d projection)

        panels.append(fig.add_subplot(1, 2, 1, projection="3d"))
        panels.append(fig.add_subplot(1, 2, 2))
    else:
        panels.append(fig.add_subplot())
    for ax in panels:
        k = 3 if getattr(ax, "name", "") == "3d" else 2
        draw_pairs(ax, target, predicted, node, k)
        if k == 3:
            ax.set_zlabel("z")
            ax.set_title("masked nodes: target vs reconstructed (3D)")
        else:
            ax.set_title("xy projection" if dim == 3 else "masked nodes: target vs reconstructed")
    panels[-1].legend(loc="best", fontsize=8)
    return png(fig)


def draw_pairs(ax: Any, target: list, predicted: list, node: list, k: int) -> None:
    """Target (blue) and reconstructed (orange) points on ``ax`` in ``k`` dimensions, a grey line
    joining each pair, one marker per node."""
    markers = "o^sDvP*X"
    groups = sorted(set(map(str, node)))
    for t, p in zip(target, predicted):
        ax.plot(*[[t[d], p[d]] for d in range(k)], color="#bbbbbb", linewidth=0.7, zorder=1)
    for g_index, g in enumerate(groups):
        idx = [i for i, n in enumerate(node) if str(n) == g]
        m = markers[g_index % len(markers)]
        suffix = f" (node {g})" if len(groups) > 1 else ""
        ax.scatter(*[[target[i][d] for i in idx] for d in range(k)], color="#1f77b4",
                   marker=m, s=22, label=f"target{suffix}")
        ax.scatter(*[[predicted[i][d] for i in idx] for d in range(k)], color="#ff7f0e",
                   marker=m, s=22, label=f"reconstructed{suffix}")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if k == 2:
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)


def outcome_chart(Figure: Any, samples: dict[str, tuple[list, list, list]],
                  errors: dict[str, list[float]]) -> str:
    """Reference and candidate side by side on shared axes (xy of a few masked entities of the
    last step read), and under them the per-entity coordinate errors of both runs."""
    fig = Figure(figsize=(12.0, 9.0), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=(3, 2))
    panels = []
    for col, role in enumerate(("reference", "candidate")):
        ax = fig.add_subplot(grid[0, col])
        if role in samples:
            draw_pairs(ax, *samples[role], k=2)
        ax.set_title(f"{role}: target vs reconstructed (xy)")
        panels.append(ax)
    # the same limits on both panels, so that the eye compares like with like
    xs = [v for ax in panels for v in ax.get_xlim()]
    ys = [v for ax in panels for v in ax.get_ylim()]
    for ax in panels:
        ax.set_xlim(min(xs), max(xs))
        ax.set_ylim(min(ys), max(ys))
        ax.set_aspect("equal", adjustable="box")
    panels[0].legend(loc="best", fontsize=7)
    hist = fig.add_subplot(grid[1, :])
    values = [v for role in errors for v in errors[role]]
    if values:
        top = max(values) or 1.0
        bins = [top * i / 30 for i in range(31)]
        for role, color in (("reference", "#1f77b4"), ("candidate", "#d62728")):
            if errors.get(role):
                hist.hist(errors[role], bins=bins, alpha=0.5, color=color,
                          label=f"{role} (mean {sum(errors[role]) / len(errors[role]):.3g})")
        hist.legend(loc="best", fontsize=8)
    hist.set_xlabel("coordinate error of a masked entity (mean distance of its points)")
    hist.set_ylabel("entities")
    hist.set_title("spread across masked entities: what the tolerance is measured against")
    return png(fig)


# -- page sections ----------------------------------------------------------------------------------


def badge(kind: str, text: Optional[str] = None) -> str:
    return f'<span class="badge {esc(kind)}">{esc(text or kind)}</span>'


def excerpt(f: Finding) -> str:
    lines = source_lines(f.path)
    if not 0 < f.line <= len(lines):
        return ""
    end = min(max(f.end_line, f.line), len(lines), f.line + MAX_EXCERPT - 1)
    first, last = max(1, f.line - CONTEXT), min(len(lines), end + CONTEXT)
    rows = []
    for n in range(first, last + 1):
        cls = ' class="hit"' if f.line <= n <= end else ""
        rows.append(f'<span{cls}><span class="ln">{n:>5}</span>{esc(lines[n - 1])}</span>')
    return '<pre class="code">' + "".join(rows) + "</pre>"


def finding_card(i: int, f: Finding) -> str:
    parts = [
        f'<div class="card {esc(f.status.value)}-card" id="f{i}">',
        f"<h3>{badge(f.status.value)} {badge(f.severity.value)} <code>{esc(f.rule)}</code> "
        f"{esc(f.name)} — <code>{esc(f.path)}:{f.line}:{f.column}</code></h3>",
        f"<p>{prose(f.message)}</p>",
        excerpt(f),
    ]
    if f.evidence:
        parts.append("<p><b>Evidence</b></p><ul>"
                     + "".join(f"<li>{prose(e)}</li>" for e in f.evidence) + "</ul>")
    if f.fix:
        parts.append(f"<p><b>Fix:</b> {prose(f.fix)}</p>")
    parts.append("</div>")
    return "\n".join(p for p in parts if p)


def findings_section(report: Report) -> list[str]:
    out = ["<h2>Findings</h2>"]
    if not report.findings:
        out.append("<p>No findings.</p>")
        return out
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    ordered = sorted(enumerate(report.findings),
                     key=lambda p: (rank[p[1].status.value], -p[1].severity.rank, p[1].sort_key()))
    out.append("<table><tr><th>status</th><th>severity</th><th>rule</th><th>location</th>"
               "<th>message</th></tr>")
    for i, f in ordered:
        out.append(
            f"<tr><td>{badge(f.status.value)}</td><td>{badge(f.severity.value)}</td>"
            f"<td><code>{esc(f.rule)}</code> {esc(f.name)}</td>"
            f'<td><a href="#f{i}"><code>{esc(f.path)}:{f.line}</code></a></td>'
            f"<td>{prose(f.message)}</td></tr>"
        )
    out.append("</table>")
    out += [finding_card(i, f) for i, f in ordered]
    return out


def _fmt(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.3g}"


def gradient_section(Figure: Any, rows: list[dict[str, Any]]) -> list[str]:
    blocked = [r for r in rows if r["state"] != "ok"]
    out = ["<h2>Gradient flow</h2>",
           f"<p>{len(rows)} parameter(s); {len(blocked)} with no usable gradient "
           "(None, all zero or non-finite), marked in red.</p>"]
    if Figure is not None:
        out.append(f'<figure id="gradient-chart"><img alt="gradient flow: gradient norm per '
                   f'parameter" src="data:image/png;base64,{gradient_chart(Figure, rows)}">'
                   "<figcaption>Bars: the gradient norm of each parameter, in model order; a "
                   "parameter the loss does not reach has none (red).</figcaption></figure>")
    shown = blocked if Figure is not None else rows
    if shown:
        out.append("<table><tr><th>parameter</th><th>‖grad‖</th><th>state</th></tr>")
        for r in shown:
            state = r["state"] + (", not reached from the loss" if r["unreached"] else "")
            out.append(f"<tr><td><code>{esc(r['name'])}</code></td><td>{_fmt(r['norm'])}</td>"
                       f"<td>{esc(state)}</td></tr>")
        out.append("</table>")
    return out


def provenance(data: dict[str, Any]) -> str:
    """Where a probe's sample comes from, and how its nodes were chosen."""
    if not isinstance(data.get("module"), str):
        return ""
    step = f" at step {esc(data['step'])}" if isinstance(data.get("step"), int) else ""
    if data.get("masked"):
        how = (f"the nodes are masked ones ({esc(data.get('masked_count', '?'))} masked in that "
               "batch: the rows the model changed before its first submodule saw them)")
    else:
        how = ("the probe could not tell the masked nodes (the model changed no row before its "
               "first submodule), so these are the batch's first nodes")
    return f" Output of <code>{esc(data['module'])}</code>{step}; {how}."


def reconstruction_section(Figure: Any, target: list, predicted: list, node: list,
                           data: dict[str, Any]) -> list[str]:
    err, spread = point_error(target, predicted)
    out = ["<h2>Reconstruction of masked nodes</h2>",
           f"<p>{len(target)} point(s) of {len(set(map(str, node)))} masked node(s): mean "
           f"distance target→reconstruction <b>{err:.3g}</b>, against a spread of the targets "
           f"of {spread:.3g} (a reconstruction as far off as the spread is scattered)."
           f"{provenance(data)}</p>"]
    short = data.get("too_short")
    if isinstance(short, dict) and isinstance(short.get("steps"), int) \
            and isinstance(short.get("minimum"), int):
        out.append(f'<p class="note" id="reconstruction-too-short"><b>The run is '
                   f"{prose(too_short_text(short))}.</b></p>")
    if Figure is not None:
        out.append('<figure id="reconstruction-chart"><img alt="target vs reconstructed points" '
                   f'src="data:image/png;base64,{reconstruction_chart(Figure, target, predicted, node)}">'
                   "<figcaption>Blue: target points; orange: reconstructed; grey lines join each "
                   "point to its reconstruction.</figcaption></figure>")
    else:
        out.append("<table><tr><th>node</th><th>target</th><th>reconstructed</th></tr>")
        for n, t, p in zip(node, target, predicted):
            out.append(f"<tr><td>{esc(n)}</td><td>{esc([round(v, 4) for v in t])}</td>"
                       f"<td>{esc([round(v, 4) for v in p])}</td></tr>")
        out.append("</table>")
    return out


def _outcome_sample(data: Any) -> Optional[tuple[list, list, list]]:
    return reconstruction_points({"reconstruction": data}) if isinstance(data, dict) else None


def outcome_section(Figure: Any, outcome: dict[str, Any], first: Any) -> list[str]:
    """``diff --outcome``: the verdict, the figures of both runs, and their reconstructions side
    by side (``auditor/diff/outcome.py`` says what each figure is); ``first``: the diff's first
    divergence, pointed to."""
    runs = {role: outcome.get(role) if isinstance(outcome.get(role), dict) else {}
            for role in ("reference", "candidate")}
    where = ""
    if isinstance(first, dict) and first.get("path"):
        where = (f" The runs first diverge at <code>{esc(first['path'])}:"
                 f"{esc(first.get('line', '?'))}</code>"
                 + (f" ({esc(first['rule'])})" if first.get("rule") else "")
                 + ': <a href="#first-divergence">first divergence and its cause</a>.')
    out = [f"<h2>Outcome: reconstruction of masked entities after {esc(outcome.get('steps', '?'))}"
           " training steps</h2>",
           f'<p class="note" id="outcome-verdict"><b>Verdict:</b> '
           f'{prose(outcome.get("verdict", ""))}.{where}</p>']
    read = []
    for role, run in runs.items():
        steps = run.get("steps") if isinstance(run.get("steps"), list) else []
        at = f"steps {esc(steps[0])}–{esc(steps[-1])}" if steps else "no step"
        read.append(f"{role}: {esc(run.get('entities', 0))} masked entities read at {at}")
    out.append(f"<p>{'; '.join(read)} (the last forwards of each run, the last one made by the "
               "model after every training step).</p>")
    comparison = outcome.get("comparison") if isinstance(outcome.get("comparison"), dict) else {}
    rows = [r for r in comparison.get("rows") or [] if isinstance(r, dict)]
    if rows:
        out.append('<table id="outcome-figures"><tr><th>figure (mean over masked entities ± '
                   "standard error)</th><th>reference</th><th>candidate</th><th>change "
                   "(+ worse)</th><th>tolerance</th><th></th></tr>")
        for r in rows:
            pm = {k: f"{_fmt(_number(r.get(k)))} ± {_fmt(_number(r.get(k + '_se')))}"
                  for k in ("reference", "candidate")}
            out.append(f"<tr><td>{esc(r.get('label', '?'))}</td><td>{pm['reference']}</td>"
                       f"<td>{pm['candidate']}</td><td>{_fmt(_number(r.get('change')))}</td>"
                       f"<td>{_fmt(_number(r.get('tolerance')))}</td>"
                       f"<td>{badge(str(r.get('status', '?')))}</td></tr>")
        ratios = []
        for run in runs.values():
            spread = run.get("spread") if isinstance(run.get("spread"), dict) else {}
            t, p = _number(spread.get("target")), _number(spread.get("predicted"))
            ratios.append(_fmt(p / t) if t and p is not None else "—")
        out.append(f"<tr><td>spread of the reconstructed points / the targets' (1: the same "
                   f"extent; near 0: collapsed; above 1: scattered wider)</td><td>{ratios[0]}</td>"
                   f"<td>{ratios[1]}</td><td></td><td></td><td></td></tr></table>")
        z = _number(comparison.get("z"))
        out.append(f"<p class='muted'>Tolerance: {_fmt(z)} standard errors "
                   "of the difference, from the spread of each figure across the masked entities "
                   "(and at least the run-to-run difference when the diff calibrated). Within it, "
                   "another draw of masked entities could reverse the change.</p>")
    samples = {role: pts for role, run in runs.items()
               if (pts := _outcome_sample(run.get("sample"))) is not None}
    errors = {role: [v for v in run.get("coord_errors") or [] if _number(v) is not None]
              for role, run in runs.items()}
    if Figure is not None and samples:
        out.append('<figure id="outcome-chart"><img alt="reference and candidate reconstructions '
                   f'side by side" src="data:image/png;base64,{outcome_chart(Figure, samples, errors)}">'
                   "<figcaption>Top: a few masked entities of each run's last step read, target "
                   "(blue) against reconstructed (orange), same axes. Bottom: the coordinate "
                   "error of every masked entity read, both runs.</figcaption></figure>")
    notes = [n for n in outcome.get("notes") or [] if isinstance(n, str)]
    if notes:
        out.append("<ul>" + "".join(f"<li>{prose(n)}</li>" for n in notes) + "</ul>")
    return out


def unreadable_section(extra: dict[str, Any]) -> list[str]:
    """Why there is no reconstruction chart, when the probe says it could not make one."""
    data = extra.get("reconstruction")
    if not isinstance(data, dict) or not isinstance(data.get("unreadable"), str):
        return []
    return ["<h2>Reconstruction of masked nodes</h2>",
            f'<p class="note" id="reconstruction-unreadable">No reconstruction chart: '
            f"{prose(data['unreadable'])}.</p>"]


def crash_banner(report: Report) -> list[str]:
    """A probe (or diff) run that did not end by the step budget or by itself: said first, with the
    program's last output, so a crashed run never reads as a clean one."""
    run = failed_run(report)
    if run is None:
        return []
    out = [f'<div class="note crash" id="probe-crash"><b>The {esc(report.command)} run did not complete</b>: '
           f"{esc(run.get('summary') or run.get('stopped'))}. Findings marked unexercised may "
           "only mean the program stopped before reaching their lines."]
    tail = [t for t in report.extra.get("output_tail") or [] if isinstance(t, str)]
    if tail:
        out.append("<pre>" + esc("\n".join(tail)) + "</pre>")
    out.append("</div>")
    return ["".join(out)]


def _item(item: Any) -> str:
    if isinstance(item, dict) and "name" in item:
        detail = item.get("detail", "")
        return f"<code>{esc(item['name'])}</code>" + (f": {esc(detail)}" if detail else "")
    return f"<code>{esc(json.dumps(item, default=str))}</code>"


def stages_section(extra: dict[str, Any]) -> list[str]:
    stages = [s for s in extra.get("stages") or [] if isinstance(s, dict)]
    first = extra.get("first_divergence")
    out = ["<h2>Reference vs candidate</h2>"]
    if isinstance(first, dict):
        where = (f" at <code>{esc(first['path'])}:{esc(first.get('line', '?'))}</code>"
                 if first.get("path") else "")
        rule = f" (likely {esc(first['rule'])})" if first.get("rule") else ""
        cause = f" Cause: {prose(first['cause'])}." if first.get("cause") else ""
        out.append(f'<p id="first-divergence">First divergence: stage '
                   f"<b>{esc(first.get('stage', '?'))}</b>, "
                   f"<code>{esc(first.get('name', '?'))}</code> — {esc(first.get('detail', ''))}"
                   f"{where}{rule}.{cause}</p>")
    else:
        out.append(f"<p>{prose(no_divergence(extra))}</p>")
    out.append("<table><tr><th>stage</th><th>status</th><th>items</th></tr>")
    for s in stages:
        items = s.get("items") if isinstance(s.get("items"), list) else []
        listed = "<br>".join(_item(x) for x in items[:MAX_ITEMS])
        if len(items) > MAX_ITEMS:
            listed += f"<br><span class='muted'>… {len(items) - MAX_ITEMS} more</span>"
        is_first = isinstance(first, dict) and first.get("stage") == s.get("stage")
        row = '<tr class="first">' if is_first else "<tr>"
        out.append(f"{row}<td>{esc(s.get('stage', '?'))}</td>"
                   f"<td>{badge(str(s.get('status', '?')))}</td><td>{listed}</td></tr>")
    out.append("</table>")
    return out


def header(report: Report) -> list[str]:
    status = Counter(f.status.value for f in report.findings)
    sev = Counter(f.severity.value for f in report.findings)
    counts = "".join(f"<span>{badge(s)} {status[s]}</span>" for s in STATUS_ORDER if status[s])
    counts += "".join(f"<span>{badge(s)} {sev[s]}</span>"
                      for s in ("error", "warning", "info") if sev[s])
    known = (report.extra.get("baseline") or {}).get("known", 0)
    facts = [f"{len(report.findings)} finding(s)", f"{report.files} file(s)",
             f"{report.seconds:.2f}s"]
    if known:
        facts.append(f"{known} known finding(s) from the baseline not shown")
    return [f"<h1>gm-audit {esc(report.command)} report</h1>",
            f'<p class="muted">gm-audit {esc(__version__)} · {esc(" · ".join(facts))}</p>',
            f'<p class="counts">{counts}</p>' if counts else ""]


def render(report: Report) -> str:
    extra = report.extra or {}
    rows = gradient_rows(extra)
    points = reconstruction_points(extra)
    has_stages = isinstance(extra.get("stages"), list)
    outcome = extra.get("outcome") if isinstance(extra.get("outcome"), dict) else None
    Figure = load_figure_class() if (rows or points or outcome) else None
    body = header(report) + crash_banner(report)
    if (rows or points or outcome) and Figure is None:
        body.append('<p class="note">Charts need matplotlib, which is not installed: '
                    "<code>pip install 'gm-audit[html]'</code>. Their data is shown as tables.</p>")
    if outcome is not None:
        body += outcome_section(Figure, outcome, extra.get("first_divergence"))
    if has_stages:
        body += stages_section(extra)
    if rows:
        body += gradient_section(Figure, rows)
    if points:
        body += reconstruction_section(Figure, *points, extra["reconstruction"])
    else:
        body += unreadable_section(extra)
    body += findings_section(report)
    if report.errors:
        body.append("<h2>Files gm-audit could not check</h2><ul>"
                    + "".join(f"<li><code>{esc(e.path)}</code>: {esc(e.message)}</li>"
                              for e in report.errors) + "</ul>")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>gm-audit {esc(report.command)}: {len(report.findings)} finding(s)</title>",
        f"<style>{CSS}</style></head><body>",
        *[b for b in body if b],
        "</body></html>",
    ]) + "\n"
