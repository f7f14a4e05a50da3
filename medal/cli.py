"""Command line: ``python -m medal {generate,train,bench} ...``."""
from __future__ import annotations

import argparse
import sys

from .errors import MedalError


def _train(args) -> int:
    from .train import train
    info = train(task=args.task, out=args.out, steps=args.steps, batch_size=args.batch_size,
                 lr=args.lr, seed=args.seed, n_layer=args.layers, n_embd=args.width,
                 threads=args.threads)
    print(f"saved {args.out} ({info['training']['parameters']} parameters, "
          f"{info['training']['seconds']:.0f} s, final loss {info['training']['final_loss']})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m medal", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a built-in tiny diffusion LM",
                       description="Train a built-in tiny diffusion LM with the masked-diffusion "
                                   "objective on generated task data; writes safetensors + JSON.")
    t.add_argument("--task", default="countdown", help="task whose data to train on")
    t.add_argument("--out", default="assets/countdown", help="checkpoint directory")
    t.add_argument("--steps", type=int, default=5000, help="optimizer steps")
    t.add_argument("--batch-size", type=int, default=128, help="examples per step")
    t.add_argument("--lr", type=float, default=1.5e-3, help="peak learning rate (cosine decay)")
    t.add_argument("--seed", type=int, default=0, help="seed for data and initialisation")
    t.add_argument("--layers", type=int, default=4, help="transformer layers")
    t.add_argument("--width", type=int, default=128, help="embedding width")
    t.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    t.set_defaults(func=_train)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except MedalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
