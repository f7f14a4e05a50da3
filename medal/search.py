"""Confidence-guided MCTS over unmasking decisions (paper Algorithm 1, DESIGN section 1).

A node is a partially unmasked answer; the root is all masks. An iteration is four
phases, each a method and each announced as an event:

* ``select``   -- from the root, the child maximising Q + c sqrt(ln N(parent) / N(child))
                  down to a leaf, skipping exhausted subtrees;
* ``expand``   -- the leaf's K2 actions (confidence score filtering) make K2 children,
                  evaluated in ONE batched forward; that forward also gives each child's
                  entropies (for its reward) and its own action set (for later);
* ``simulate`` -- each child's completion fills its remaining masks from its prediction
                  (no forward); its reward is the information gain r_IG;
* ``backpropagate`` -- each child's reward is added to W and 1 to N of the child and of
                  every node on the path to the root.

A child with L_c slots unmasked by the search is a candidate; the search stops when C
candidates exist, the tree is exhausted, or the iteration budget runs out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .decoding import eligible_slots_batch, rollout
from .events import Backpropagated, Expanded, RootEvaluated, Selected, Simulated
from .runner import Evaluation, ModelRunner
from .scores import Action, action_sets, information_gains, rollout_information_gain, ucb


@dataclass(eq=False)
class Node:
    id: int
    parent: "Node | None"
    action: Action | None
    depth: int
    evaluation: Evaluation
    actions: list[Action]          # this node's action set (what expanding it would add)
    r_ig: float | None = None      # information gain when it was made
    verified: bool | None = None   # its completion passes the task's verifier (if asked)
    reward: float | None = None    # what backpropagation adds: r_IG (+ verifier bonus)
    completion: torch.Tensor | None = None
    children: list["Node"] = field(default_factory=list)
    N: int = 0
    W: float = 0.0
    exhausted: bool = False
    candidate: bool = False
    last_ucb: float | None = None

    @property
    def Q(self) -> float:
        return self.W / self.N if self.N else 0.0

    @property
    def answer(self) -> torch.Tensor:
        return self.evaluation.answer

    def path(self) -> list["Node"]:
        node, out = self, []
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]


class MCTS:
    """One search over one prompt. ``iterate()`` yields the four phase events."""

    def __init__(self, runner: ModelRunner, cfg, generator: torch.Generator | None = None,
                 verifier=None):
        self.runner = runner
        self.cfg = cfg
        self.generator = generator
        # answer ids -> bool; used only with cfg.reward == "ig+verifier"
        self.verifier = verifier if cfg.reward == "ig+verifier" else None
        self.nodes: list[Node] = []
        self.iteration = 0
        self.candidates: list[Node] = []
        self.stop_reason: str | None = None
        self.last_simulation = {"forwards": 0, "sequences": 0, "cache_hits": 0}
        self.root = self._make_node(None, None, runner.evaluate_one(runner.initial_answer()))

    # ------------------------------------------------------------------ helpers
    def _make_nodes(self, parent: Node | None, actions: list[Action | None],
                    evs: list[Evaluation]) -> list[Node]:
        """Nodes for evaluated states, their action sets made in one tensor pass over all
        of them (the K2 children of an expansion: one pass, not K2)."""
        depth = 0 if parent is None else parent.depth + 1
        if depth >= self.cfg.lc:
            sets = [[] for _ in evs]
        else:
            masked = torch.stack([ev.masked for ev in evs])
            eligible = eligible_slots_batch(masked, self.cfg.block_length)
            sets = action_sets(torch.stack([ev.top_tokens for ev in evs]),
                               torch.stack([ev.top_probs for ev in evs]),
                               torch.stack([ev.entropy for ev in evs]), eligible,
                               self.cfg.k1, self.cfg.k2, self.cfg.gamma, self.cfg.scoring,
                               late_tokens=self.runner.model.end_ids
                               if getattr(self.cfg, "confidence_eos_eot_inf", False) else ())
        nodes = []
        for action, ev, acts in zip(actions, evs, sets):
            # no action means no eligible slot, or depth L_c reached: a terminal node
            node = Node(id=len(self.nodes), parent=parent, action=action, depth=depth,
                        evaluation=ev, actions=acts, exhausted=not acts,
                        candidate=depth >= self.cfg.lc)
            self.nodes.append(node)
            nodes.append(node)
        return nodes

    def _make_node(self, parent: Node | None, action: Action | None, ev: Evaluation) -> Node:
        return self._make_nodes(parent, [action], [ev])[0]

    def root_event(self) -> RootEvaluated:
        return RootEvaluated(node=self.root)

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    # ------------------------------------------------------------------ phases
    def select(self) -> tuple[list[Node], list[list[dict]]]:
        """UCB descent from the root to a leaf that can still be expanded."""
        node, levels = self.root, []
        while node.children:
            options = [ch for ch in node.children if not ch.exhausted]
            level = []
            for ch in node.children:
                value = ucb(ch.Q, node.N, ch.N, self.cfg.c)
                ch.last_ucb = value
                level.append({"node": ch.id, "N": ch.N, "W": ch.W, "Q": ch.Q,
                              "parent_N": node.N, "ucb": value, "exhausted": ch.exhausted})
            best = max(options, key=lambda ch: (ch.last_ucb, -ch.id))
            for row in level:
                row["chosen"] = row["node"] == best.id
            levels.append(level)
            node = best
        return node.path(), levels

    def expand(self, leaf: Node) -> tuple[list[Node], int, int]:
        """Children for the leaf's K2 actions, in one batched forward."""
        actions = leaf.actions
        answers = leaf.answer.repeat(len(actions), 1)
        answers[torch.arange(len(actions)), torch.tensor([a.slot for a in actions])] = \
            torch.tensor([a.token for a in actions])
        before = self.runner.forwards
        hits_before = self.runner.cache_hits
        seqs_before = self.runner.sequences
        evs = self.runner.evaluate(answers)
        children = self._make_nodes(leaf, actions, evs)
        leaf.children = children
        self.last_expansion_sequences = self.runner.sequences - seqs_before
        return children, self.runner.forwards - before, self.runner.cache_hits - hits_before

    def simulate(self, leaf: Node, children: list[Node]) -> list[float]:
        """Each child's completion and information-gain reward (no forward; with
        simulation "rollout", k-1 batched forwards, counted in ``self.last_simulation``).

        The children's completions come from one tensor pass over all of them (argmax
        fills; a sampled fill draws child by child, so the random stream is as before),
        and the parent's entropy total is taken once."""
        parent = leaf.evaluation
        if self.cfg.simulation == "rollout":
            fills, fill_entropy = self._rollouts(children)
            completions = fills
            gains = [rollout_information_gain(parent.entropy, parent.masked, fill_entropy[i],
                                              ch.evaluation.masked)
                     for i, ch in enumerate(children)]
        else:
            evs = [ch.evaluation for ch in children]
            if self.cfg.simulation == "sample":
                completions = [ev.completion(self.generator, 1.0) for ev in evs]
            else:
                masked = torch.stack([ev.masked for ev in evs])
                best = torch.stack([ev.top_tokens[:, 0] for ev in evs])
                completions = torch.where(masked, best,
                                          torch.stack([ev.answer for ev in evs])).unbind(0)
            gains = information_gains(parent.entropy, parent.masked,
                                      [ev.entropy for ev in evs],
                                      [ch.action.slot for ch in children])
        rewards = []
        for ch, completion, gain in zip(children, completions, gains):
            ch.completion = completion
            ch.r_ig = ch.reward = gain
            if self.verifier is not None:
                ch.verified = bool(self.verifier(ch.completion))
                ch.reward += self.cfg.verifier_bonus * ch.verified
            rewards.append(ch.reward)
        return rewards

    def _rollouts(self, children: list[Node]):
        """The paper's simulation as an option: a k-step DLM rollout of every child."""
        r = self.runner
        before = (r.forwards, r.sequences, r.cache_hits)
        out = rollout(r, [ch.evaluation for ch in children], self.cfg.rollout_steps,
                      self.cfg.block_length, self.cfg.gamma, self.cfg.scoring)
        self.last_simulation = {"forwards": r.forwards - before[0],
                                "sequences": r.sequences - before[1],
                                "cache_hits": r.cache_hits - before[2]}
        return out

    def backpropagate(self, path: list[Node], children: list[Node]) -> list[dict]:
        """Each child's reward: +r to W and +1 to N on the child and on every path node."""
        for ch in children:
            ch.N += 1
            ch.W += ch.reward
            for node in path:
                node.N += 1
                node.W += ch.reward
        self._mark_exhausted(path)
        return [{"node": n.id, "N": n.N, "W": n.W, "Q": n.Q} for n in path + children]

    def _mark_exhausted(self, path: list[Node]) -> None:
        for node in reversed(path):
            if node.children and all(ch.exhausted for ch in node.children):
                node.exhausted = True

    def _collect(self, children: list[Node]) -> list[Node]:
        new = [ch for ch in children if ch.candidate]
        if self.cfg.one_per_parent and new:
            new = [max(new, key=lambda ch: (ch.reward, -ch.id))]
        seen = {c.answer.numpy().tobytes() for c in self.candidates}
        fresh = []
        for ch in sorted(new, key=lambda ch: (-ch.reward, ch.id)):
            key = ch.answer.numpy().tobytes()
            if key not in seen:
                seen.add(key)
                fresh.append(ch)
        room = self.cfg.candidates - len(self.candidates)
        fresh = fresh[:max(room, 0)]
        self.candidates.extend(fresh)
        return fresh

    # ------------------------------------------------------------------ iteration
    def iterate(self):
        """One MCTS iteration; yields Selected, Expanded, Simulated, Backpropagated."""
        self.iteration += 1
        it = self.iteration
        path, levels = self.select()
        leaf = path[-1]
        yield Selected(iteration=it, path=[n.id for n in path], levels=levels)
        children, forwards, cached = self.expand(leaf)
        yield Expanded(iteration=it, leaf=leaf.id, children=children, forwards=forwards,
                       cached=cached, sequences=self.last_expansion_sequences)
        rewards = self.simulate(leaf, children)
        yield Simulated(iteration=it, children=[c.id for c in children], rewards=rewards,
                        completion_ids=[c.completion for c in children],
                        decode=self.runner.model.decode_masked,
                        **(self.last_simulation if self.cfg.simulation == "rollout" else {}))
        updates = self.backpropagate(path, children)
        fresh = self._collect(children)
        if len(self.candidates) >= self.cfg.candidates:
            self.stop_reason = "candidates"
        elif self.root.exhausted:
            self.stop_reason = "exhausted"
        elif self.iteration >= self.cfg.max_iterations:
            self.stop_reason = "budget"
        yield Backpropagated(iteration=it, path=[n.id for n in path], updates=updates,
                             new_candidates=[c.id for c in fresh])

    def fallback_candidates(self) -> list[Node]:
        """When the budget ends before C candidates: the deepest nodes, best Q first."""
        pool = [n for n in self.nodes if n is not self.root and n not in self.candidates]
        pool.sort(key=lambda n: (-n.depth, -n.Q, n.id))
        return (self.candidates + pool)[: self.cfg.candidates] or [self.root]
