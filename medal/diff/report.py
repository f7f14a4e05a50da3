"""What :func:`~medal.diff.diff_traces` answers (:class:`TraceDiff`) and its text report."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

PHASES = ("search", "candidates", "decode", "comparison")
CAUSES = ("configuration", "forced action", "near tie", "different selection",
          "different action set", "different sample", "different model figures",
          "different edits", "different values", "different length")


@dataclass
class Divergence:
    """The first place two runs part, and why.

    ``position``: where on the timeline (``kind``: started, root, selection, expansion,
    simulation, backpropagation, search_finished, candidate_chosen, decode, compare,
    finished, or config; ``iteration`` for MCTS phases; ``index``/``step``/``phase`` for
    decode steps; ``label`` for people). ``phase``: run, search, candidates, decode,
    comparison or result. ``cause``: one of :data:`CAUSES`. ``a`` and ``b``: what each
    run did there (e.g. the selected node, its action and UCB value). ``near_tie``: the
    two choices' values were equal to float32 rounding (None: not a choice between
    scored options). ``paths``: the first differing JSON paths, with both values."""
    position: dict
    phase: str
    cause: str
    explanation: str
    a: dict = field(default_factory=dict)
    b: dict = field(default_factory=dict)
    near_tie: bool | None = None
    paths: list = field(default_factory=list)


@dataclass
class TraceDiff:
    """:func:`diff_traces`'s answer. ``identical``: the same run apart from context
    (timing, fork record, environment); ``equal_within_tolerance``: floats within the
    tolerance, everything else identical; ``first``: the first divergence beyond
    tolerance (None when equal within it); ``first_exact``: the first position with any
    difference at all (None when identical); ``config``: configuration keys that differ,
    {key: [a, b]}; ``phases``: {search|candidates|decode|comparison: "same" | "same
    within tolerance" | "different" | "absent" | "only in A" | "only in B"};
    ``side_by_side``: {figure: [a, b]} (answer, verdict, costs...); ``context``: {key: [a,
    b]} of what was set aside (timing, fork, versions, device, reproducibility);
    ``tolerance``: (rel, abs_tol); ``names``: the two traces' names in the report."""
    identical: bool
    equal_within_tolerance: bool
    first: Divergence | None
    first_exact: Divergence | None
    config: dict
    phases: dict
    side_by_side: dict
    context: dict
    tolerance: tuple
    names: tuple = ("A", "B")

    def to_json(self) -> dict:
        from ..trace import jsonable
        out = asdict(self)
        out["names"] = list(self.names)
        out["tolerance"] = {"rel": self.tolerance[0], "abs": self.tolerance[1]}
        return jsonable(out)

    def format(self) -> str:
        """The report for people (``medal diff``'s output)."""
        A, B = self.names
        lines = []
        if self.identical:
            lines.append("identical: the same run (timing and environment aside)")
        elif self.equal_within_tolerance:
            lines.append(f"equal within tolerance (rel {self.tolerance[0]:g}, abs "
                         f"{self.tolerance[1]:g}), not identical")
        else:
            lines.append("different")
        if self.config:
            lines.append("configuration: " + ", ".join(
                f"{k} {_show(a)} -> {_show(b)}" for k, (a, b) in self.config.items()))
        for d, title in ((self.first, "first divergence"),
                         (self.first_exact if self.first is None else None,
                          "first exact difference")):
            if d is None:
                continue
            lines.append(f"{title}: {d.position['label']} ({d.phase}) -- {d.cause}")
            lines.append(f"  {d.explanation}")
            for p, x, y in d.paths[:3]:
                lines.append(f"  {p}: {_show(x)} -> {_show(y)}")
        if self.phases:
            lines.append("phases: " + ", ".join(f"{k} {v}" for k, v in self.phases.items()))
        width = max((len(k) for k in self.side_by_side), default=0)
        if self.side_by_side:
            lines.append(f"{'':{width}}  {A:<24}  {B}")
        for k, (a, b) in self.side_by_side.items():
            mark = "" if a == b or k == "seconds" else "  *"
            lines.append(f"{k:{width}}  {_show(a):<24}  {_show(b)}{mark}")
        ctx = {k: v for k, v in self.context.items() if v[0] != v[1]}
        if ctx:
            lines.append("context (not compared): " + ", ".join(
                f"{k} differs" if k != "timing" else "timing" for k in ctx))
        return "\n".join(lines)


def _show(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if v is None:
        return "-"
    text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."
