"""The commands that read a trace: ``repro``, ``fork``, ``diff``, ``candidates`` and
``export`` (docs/DEBUGGING.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import InputError
from .checks import check_output


def repro_command(args) -> int:
    """Re-run a trace from its own record and say whether the run reproduces."""
    import json

    from ..models import model_options
    from ..repro import MATCH, environment_changes, reproduce
    from ..trace import load_trace

    trace = load_trace(args.trace)
    from ..serving import check_received_config
    check_received_config(trace, "medal repro")
    options = model_options(args) if args.model is None else {}
    model = None
    if args.model is not None:
        from ..models import load_model
        model = load_model(args.model, **model_options(args))
    verdict, diff, new = reproduce(trace, model=model, **options)
    env = environment_changes(trace.get("reproducibility"), new.get("reproducibility"))
    if args.json:
        print(json.dumps({"verdict": verdict, "match": verdict in MATCH,
                          "environment_changes": env, "diff": diff.to_json()}))
    else:
        print(f"{args.trace}: {verdict}")
        if diff.first is not None:
            d = diff.first
            print(f"first difference: {d.position['label']} ({d.phase}) -- {d.cause}")
            print(f"  {d.explanation}")
        elif diff.first_exact is not None and not diff.identical:
            d = diff.first_exact
            print(f"first exact difference (within tolerance): {d.position['label']} "
                  f"({d.phase})")
        for line in env:
            print(f"environment: {line}")
    return 0 if verdict in MATCH else 1


def fork_command(args) -> int:
    from ..diff import diff_traces
    from ..fork import fork, parse_action
    from ..trace import load_trace, write_trace

    parent = load_trace(args.parent)
    check_output(args.trace, "--trace")
    actions = [parse_action(a) for a in args.action]
    if parent.get("result") is None:
        raise InputError("this trace is of a run that did not finish (its result is null: "
                         "a run in progress or a replay position); fork a finished run's "
                         "trace (export it after the run ends)")
    from ..serving import check_received_config
    check_received_config(parent, "medal fork")
    model = None
    if args.model:
        from ..models import load_model
        model = load_model(args.model)
    run = fork(parent, node=args.node, step=args.step, actions=actions, then=args.then,
               model=model)
    run.finish()
    write_trace(run.trace, args.trace)
    child = run.trace
    d = diff_traces(parent, child, names=("parent", "fork"))
    rec = child["fork"]
    where = f"node {rec['node']}" if "node" in rec else f"decode step {rec['step']}"
    forced = ", ".join(f"{f['slot']}:{f['token_text']}" for f in rec["forced"])
    pr, fr = parent["result"], child["result"]
    if args.json:
        print(json.dumps({"trace": args.trace, "fork": rec,
                          "parent": {"answer": pr["answer"], "verified": pr["verified"]},
                          "answer": fr["answer"], "verified": fr["verified"],
                          "identical_to_parent": d.identical,
                          "first_divergence": d.to_json()["first"]}))
        return 0
    print(f"forced:    {forced} at {where}, then {rec['then']}")
    print(f"answer:    {fr['text']!r} (parent: {pr['text']!r})")
    if fr["verified"] is not None:
        print(f"verified:  {'yes' if fr['verified'] else 'no'} (parent: "
              f"{'yes' if pr['verified'] else 'no'})")
    if d.identical:
        print("the fork is the parent's run again (the forced action is the one it took)")
    elif d.first is not None:
        print(f"parts at:  {d.first.position['label']} -- {d.first.cause}")
        if d.first.cause != "forced action":
            print("warning:   the replay parted from the parent before the fork's position "
                  "(another model, device or version?); the fork's figures are this "
                  "machine's", file=sys.stderr)
    print(f"trace:     {args.trace} (compare: python -m medal diff {args.parent} {args.trace})")
    return 0


def diff_command(args) -> int:
    from ..diff import ABS, REL, diff_traces
    from ..trace import load_trace

    rel = REL if args.rel is None else args.rel
    abs_tol = ABS if args.abs_tol is None else args.abs_tol
    for flag, v in (("--rel", rel), ("--abs", abs_tol)):
        if not (0 <= v <= 1):
            raise InputError(f"{flag} must be between 0 and 1, got {v}")
    if args.html:
        from ..files import refuse_overwriting_input
        refuse_overwriting_input([args.a, args.b], args.html, "--html")
        check_output(args.html, "--html")
    a, b = load_trace(args.a), load_trace(args.b)
    d = diff_traces(a, b, rel=rel, abs_tol=abs_tol)
    print(json.dumps(d.to_json()) if args.json else d.format())
    if args.html:
        from ..viewer.comparison import Comparison
        names = (Path(args.a).stem, Path(args.b).stem)
        if names[0] == names[1]:
            names = (args.a, args.b)
        path = Comparison(a, b, names, rel=rel, abs_tol=abs_tol).save_html(args.html)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): the two runs side by side; "
              "open it in any browser", file=sys.stderr if args.json else sys.stdout)
    return 0 if d.identical else 1


def candidates_command(args) -> int:
    from ..diff import compare_candidates, format_candidates
    from ..trace import jsonable, load_trace

    report = compare_candidates(load_trace(args.trace), args.node_a, args.node_b)
    print(json.dumps(jsonable(report)) if args.json else format_candidates(report))
    return 0


def export_command(args) -> int:
    from ..trace import load_trace
    from ..viewer.export import write_html

    from ..files import refuse_overwriting_input
    refuse_overwriting_input([args.trace], args.out, "the output")
    check_output(args.out, "the output")
    trace = load_trace(args.trace)
    path = write_html(trace, args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): open it in any browser")
    return 0
