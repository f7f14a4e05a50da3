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

import numpy as np
import torch

from .decoding import eligible_slots_array, rollout
from .events import Backpropagated, Expanded, RootEvaluated, Selected, Simulated
from .runner import Evaluation, EvaluationBatch, ModelRunner
from .scores import (Action, ActionSets, batch_action_sets, entropy_totals, information_gains,
                     ucb, uncertainty_penalised_gains)


class Node:
    """A search node: one row of an evaluated batch, and its statistics.

    Every node is the same thing: row :attr:`row` of the :class:`EvaluationBatch`
    :attr:`batch` that evaluated it (the root: a batch of one; an expansion's children:
    the rows of its one forward; a fork's forced child: a batch of one), with that
    batch's action sets :attr:`sets` (None at depth L_c). Its evaluation, answer and
    action set are read from there, one way each; ``evaluation`` and ``actions`` (as
    :class:`Action` objects) are made only when read, since the search itself works on
    the batch's arrays. ``action`` (what made it) is its parent's ``actions[index]``, or
    the forced action of a fork's commitment."""

    __slots__ = ("id", "parent", "depth", "index", "batch", "row", "sets", "r_ig",
                 "verified", "reward", "completion", "children", "N", "W", "exhausted",
                 "candidate", "last_ucb", "entropy_total", "_action")

    def __init__(self, id: int, parent: "Node | None", depth: int, batch: EvaluationBatch,
                 row: int, sets: ActionSets | None, *, index: int | None = None,
                 entropy_total: float = 0.0, exhausted: bool = False,
                 candidate: bool = False):
        self.id = id
        self.parent = parent
        self.depth = depth
        self.index = index                # which of the parent's actions made it
        self.batch = batch                # the evaluation: row ``row`` of ``batch``
        self.row = row
        self.sets = sets                  # ``batch``'s action sets (row ``row`` is ours)
        self.r_ig: float | None = None    # information gain when it was made
        self.verified: bool | None = None  # its completion passes the task's verifier
        self.reward: float | None = None  # what backpropagation adds: r_IG (+ verifier bonus)
        self.completion: torch.Tensor | None = None
        self.children: list[Node] = []
        self.N = 0
        self.W = 0.0
        self.exhausted = exhausted
        self.candidate = candidate
        self.last_ucb: float | None = None
        #: the entropy summed over its masked slots: r_IG's total (``entropy_totals``)
        self.entropy_total = entropy_total
        self._action: Action | None = None   # made when first read (or forced)

    @property
    def evaluation(self) -> Evaluation:
        return self.batch.evaluations[self.row]

    @property
    def answer(self) -> torch.Tensor:
        return self.batch.answer[self.row]

    def answer_array(self) -> np.ndarray:
        """The node's answer as a NumPy view (no torch call)."""
        return self.batch.arrays[0][self.row]

    @property
    def actions(self) -> list[Action]:
        """This node's action set: what expanding it would add (none at depth L_c)."""
        return self.sets.actions(self.row) if self.sets is not None else []

    def action_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The slots and tokens of this node's action set, in order (``[K]`` each)."""
        if self.sets is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        return self.sets.slots_tokens(self.row)

    @property
    def action(self) -> Action | None:
        if self._action is None and self.parent is not None and self.index is not None:
            self._action = self.parent.actions[self.index]
        return self._action

    @action.setter
    def action(self, value: Action | None) -> None:
        self._action = value

    @property
    def Q(self) -> float:
        return self.W / self.N if self.N else 0.0

    def path(self) -> list["Node"]:
        node, out = self, []
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def __repr__(self) -> str:
        return (f"Node(id={self.id}, depth={self.depth}, N={self.N}, W={self.W}, "
                f"parent={self.parent.id if self.parent is not None else None})")


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
        self.last_expansion_sequences = 0
        #: a fork's committed path, root first (:mod:`medal.fork`): selection follows it
        #: down to its last node, the focus, and searches below that; empty: no fork
        self.committed: list[Node] = []
        self.budget = cfg.max_iterations   # the iteration at which the search stops
        root = runner.evaluate_batch(runner.initial_answer().unsqueeze(0))
        self.root = self._make_nodes(None, root)[0]

    # ------------------------------------------------------------------ helpers
    def _make_nodes(self, parent: Node | None, batch: EvaluationBatch) -> list[Node]:
        """Nodes for the rows of an evaluated batch (the root, or the K2 children of an
        expansion in the order of the parent's actions): their action sets and entropy
        totals each made in one pass over all of them, not one per state."""
        cfg = self.cfg
        B = len(batch)
        depth = 0 if parent is None else parent.depth + 1
        _, masked, H, top_tokens, top_probs = batch.arrays
        totals = entropy_totals(H, masked)
        if depth >= cfg.lc:
            sets, counts = None, [0] * B
        else:
            L = masked.shape[1]
            eligible = (masked if cfg.block_length >= L
                        else eligible_slots_array(masked, cfg.block_length))
            sets = batch_action_sets(top_tokens, top_probs, H,
                                     eligible, cfg.k1, cfg.k2, cfg.gamma, cfg.scoring,
                                     late_tokens=self.runner.model.end_ids
                                     if cfg.confidence_eos_eot_inf else (),
                                     min_prob=cfg.min_action_prob)
            counts = sets.counts
        nodes = []
        start = len(self.nodes)
        candidate = depth >= cfg.lc
        for b in range(B):
            # no action means no eligible slot, or depth L_c reached: a terminal node
            nodes.append(Node(start + b, parent, depth, batch, b, sets,
                              index=None if parent is None else b, entropy_total=totals[b],
                              exhausted=not counts[b], candidate=candidate))
        self.nodes.extend(nodes)
        return nodes

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
            if node.depth + 1 < len(self.committed):   # a fork's commitment
                best = self.committed[node.depth + 1]
            elif getattr(self.cfg, "selection", "ucb") == "greedy":   # choice control: no UCB
                best = max(options, key=lambda ch: (ch.reward or 0.0, -ch.id))
            else:
                best = max(options, key=lambda ch: (ch.last_ucb, -ch.id))
            for row in level:
                row["chosen"] = row["node"] == best.id
            levels.append(level)
            node = best
        return node.path(), levels

    def child_answers(self, leaf: Node) -> torch.Tensor:
        """The answers of the leaf's children, one per action in order (``[K, L]``)."""
        slots, tokens = leaf.action_arrays()
        answers = np.repeat(leaf.answer_array()[None, :], len(slots), 0)
        answers[np.arange(len(slots)), slots] = tokens
        return torch.from_numpy(answers)

    def expand(self, leaf: Node, answers: torch.Tensor | None = None
               ) -> tuple[list[Node], int, int]:
        """Children for the leaf's K2 actions (their answers: :meth:`child_answers`), in
        one batched forward."""
        if answers is None:
            answers = self.child_answers(leaf)
        before = self.runner.forwards
        hits_before = self.runner.cache_hits
        seqs_before = self.runner.sequences
        batch = self.runner.evaluate_batch(answers)
        children = self._make_nodes(leaf, batch)
        leaf.children = children
        self.last_expansion_sequences = self.runner.sequences - seqs_before
        return children, self.runner.forwards - before, self.runner.cache_hits - hits_before

    def simulate(self, leaf: Node, children: list[Node]) -> list[float]:
        """Each child's completion and information-gain reward (no forward; with
        simulation "rollout", k-1 batched forwards, counted in ``self.last_simulation``).

        The children's completions come from one tensor pass over all of them (argmax
        fills; a sampled fill draws child by child, so the random stream is as before).
        Their rewards are one call of :func:`~medal.scores.information_gains`, whatever
        the simulation: r_IG = (H_total(leaf) - H_total(child)) / H_total(leaf), each
        total over the state's masked slots (a child's: its leaf's less the action's
        slot), of its own entropies, made with the node (:func:`entropy_totals`); with a
        rollout, the child's is of the entropy each slot had when the rollout filled it."""
        batch = children[0].batch
        assert all(ch.batch is batch and ch.row == b for b, ch in enumerate(children)), \
            "simulate takes an expansion's children: the rows of its batch, in order"
        if self.cfg.simulation == "rollout":
            completions, fill_entropy = self._rollouts(children)
            afters = entropy_totals(torch.stack(fill_entropy), batch.masked)
        else:
            afters = [ch.entropy_total for ch in children]
            if self.cfg.simulation == "sample":
                completions = [ch.evaluation.completion(self.generator, 1.0) for ch in children]
            else:
                answer, masked, _, top_tokens, _ = batch.arrays
                completions = torch.from_numpy(
                    np.where(masked, top_tokens[..., 0], answer)).unbind(0)
        gains = information_gains(leaf.entropy_total, afters)
        rewards = gains
        if self.cfg.reward == "ig-certain":   # beyond the paper (issue 38)
            H = leaf.batch.arrays[2][leaf.row]
            rewards = uncertainty_penalised_gains(
                gains, [float(H[ch.action.slot]) for ch in children], leaf.entropy_total,
                self.cfg.uncertainty_penalty)
        return [self._reward(ch, completion, gain, reward)
                for ch, completion, gain, reward in zip(children, completions, gains, rewards)]

    def _reward(self, child: Node, completion, gain: float, reward: float | None = None
                ) -> float:
        """A new child's completion and reward: r_IG (or ``reward``, the "ig-certain"
        variant's, beyond the paper: the node keeps the paper's r_IG beside it), plus the
        verifier's bonus when the run has one (beyond the paper)."""
        child.completion = completion
        child.r_ig = gain
        child.reward = gain if reward is None else reward
        if self.verifier is not None:
            child.verified = bool(self.verifier(child.completion))
            child.reward += self.cfg.verifier_bonus * child.verified
        return child.reward

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
        if not new:
            return []
        if self.cfg.one_per_parent:
            new = [max(new, key=lambda ch: (ch.reward, -ch.id))]
        seen = {c.answer_array().tobytes() for c in self.candidates}
        fresh = []
        for ch in sorted(new, key=lambda ch: (-ch.reward, ch.id)):
            key = ch.answer_array().tobytes()
            if key not in seen:
                seen.add(key)
                fresh.append(ch)
        room = self.cfg.candidates - len(self.candidates)
        fresh = fresh[:max(room, 0)]
        self.candidates.extend(fresh)
        return fresh

    # ------------------------------------------------------------------ iteration
    def iterate(self):
        """One MCTS iteration; yields Selected, Expanded, Simulated, Backpropagated (and,
        when the runner defers its forwards, the expansion's
        :class:`~medal.runner.ForwardRequest` before Expanded: lock-step)."""
        self.iteration += 1
        it = self.iteration
        path, levels = self.select()
        leaf = path[-1]
        yield Selected(iteration=it, path=[n.id for n in path], levels=levels)
        answers = self.child_answers(leaf)
        yield from self.runner.prepare(answers)   # lock-step: a scheduler may batch it
        children, forwards, cached = self.expand(leaf, answers)
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
        elif self.focus.exhausted:
            self.stop_reason = "exhausted"
        elif self.iteration >= self.budget:
            self.stop_reason = "budget"
        yield Backpropagated(iteration=it, path=[n.id for n in path], updates=updates,
                             new_candidates=[c.id for c in fresh])

    @property
    def focus(self) -> Node:
        """Where the search looks: the root, or the last node of a fork's commitment."""
        return self.committed[-1] if self.committed else self.root

    def below_focus(self, node: Node) -> bool:
        """``node`` is the focus or one of its descendants."""
        focus = self.focus
        while node is not None and node.depth >= focus.depth:
            if node is focus:
                return True
            node = node.parent
        return False

    def stats(self, candidates: list[Node] | None = None) -> dict:
        """What the search did (issue 20: does the tree branch?): iterations run, why it
        stopped, nodes made, the deepest depth reached, how many expansions were not on
        the first-expanded path (``branch_expansions``: 0 means the search only ever went
        down one line), and of the candidates: how many, how many distinct answer states
        (two orders of the same commitments are one state) and how many distinct first
        commitments (subtrees of the root) they come from."""
        cands = self.candidates if candidates is None else candidates
        expanded = [n for n in self.nodes if n.children]
        # the first line: the root, then each time the first-expanded child
        line, node = set(), self.root
        while node is not None and node.children:
            line.add(node.id)
            node = min((ch for ch in node.children if ch.children), key=lambda ch: ch.id,
                       default=None)
        firsts = {n.path()[1].id for n in cands if n.depth >= 1}
        return {"iterations": self.iteration, "stop_reason": self.stop_reason,
                "nodes": len(self.nodes),
                "depth_reached": max((n.depth for n in self.nodes), default=0),
                "expanded": len(expanded),
                "branch_expansions": sum(n.id not in line for n in expanded),
                "candidates": len(cands),
                "distinct_candidate_states": len({n.answer_array().tobytes() for n in cands}),
                "distinct_first_commitments": len(firsts)}

    def confident_commitments(self) -> list[tuple[int, int]] | None:
        """The (slot, token) pairs of the most confident path: from the root, each node's
        first action (the highest confidence score) down to depth L_c -- what
        ``medal-order`` commits. None where the tree does not hold that path to L_c."""
        node, out = self.root, []
        while node.depth < self.cfg.lc:
            if not node.children:
                return None
            node = node.children[0]
            out.append((node.action.slot, node.action.token))
        return out

    def winner_stats(self, winner: Node) -> dict:
        """Beside :meth:`stats`, once the winner is known: whether it differs from the most
        confident path (other commitments, in any order; a path the tree does not hold to
        L_c counts as different)."""
        mine = {(n.action.slot, n.action.token) for n in winner.path()[1:]}
        confident = self.confident_commitments()
        return {"winner_off_confident_path": confident is None or mine != set(confident)}

    def fallback_candidates(self) -> list[Node]:
        """When the budget ends before C candidates: the deepest nodes, best Q first
        (below a fork's focus, if any)."""
        pool = [n for n in self.nodes if n is not self.root and n not in self.candidates
                and self.below_focus(n)]
        pool.sort(key=lambda n: (-n.depth, -n.Q, n.id))
        return (self.candidates + pool)[: self.cfg.candidates] or [self.focus]

    # ------------------------------------------------------------------ forks
    def commit(self, node_id: int, forced) -> tuple[list[Node], list[Node]]:
        """A fork's commitment: the (slot, token) pairs of ``forced`` applied in order from
        node ``node_id``, each as a child of the one before (an existing child is reused;
        a new one is evaluated in one forward, rewarded and backed up as an expansion's
        child is). Returns (the commitment's path, the nodes made)."""
        from .errors import InputError
        if not 0 <= node_id < len(self.nodes):
            raise InputError(f"node {node_id} is not in the tree ({len(self.nodes)} nodes); "
                             "the replay's tree differs from the trace's (another model?)")
        mask_id = self.runner.model.mask_id
        current = self.nodes[node_id]
        path, new = [], []
        for slot, token in forced:
            if int(current.answer_array()[slot]) != mask_id:
                raise InputError(f"slot {slot} is already unmasked at node {current.id}")
            child = next((ch for ch in current.children
                          if ch.action is not None and ch.action.slot == slot
                          and ch.action.token == token), None)
            if child is None:
                answer = current.answer.clone()
                answer[slot] = token
                child = self._make_nodes(current, self.runner.evaluate_batch(answer[None]))[0]
                child.index = None
                child.action = forced_action(current, slot, token, self.cfg)
                gain = information_gains(current.entropy_total, [child.entropy_total])[0]
                reward = None
                if self.cfg.reward == "ig-certain":   # beyond the paper (issue 38)
                    reward = uncertainty_penalised_gains(
                        [gain], [float(current.batch.arrays[2][current.row][slot])],
                        current.entropy_total, self.cfg.uncertainty_penalty)[0]
                self._reward(child, child.evaluation.completion(), gain, reward)
                current.children.append(child)
                self.backpropagate(current.path(), [child])
                new.append(child)
            path.append(child)
            current = child
        return path, new

    def refocus(self, focus: Node, made_new: bool) -> bool:
        """Go on searching below ``focus`` (a fork's last committed node): keep the
        candidates under it (and the focus itself, if it is one), renew the iteration
        budget. False when that changes nothing (no new node, every candidate kept): the
        parent's search stands."""
        before = list(self.candidates)
        self.committed = focus.path()
        kept = [c for c in before if self.below_focus(c)]
        if focus.candidate and focus not in kept and not any(
                c.answer_array().tobytes() == focus.answer_array().tobytes() for c in kept):
            kept.append(focus)
        if not made_new and len(kept) == len(before):
            return False
        self.candidates = kept[: self.cfg.candidates]
        self.budget = self.iteration + self.cfg.max_iterations
        self.stop_reason = None
        if len(self.candidates) >= self.cfg.candidates:
            self.stop_reason = "candidates"
        elif focus.exhausted:
            self.stop_reason = "exhausted"
        return True


def forced_action(node: Node, slot: int, token: int, cfg) -> Action:
    """The :class:`Action` (slot, token) at ``node`` with its figures (p 0 when the token
    is outside the node's recorded top-k)."""
    from .scores import slot_scores
    ev = node.evaluation
    hit = ev.top_tokens[slot] == token
    p = float((ev.top_probs[slot] * hit).sum())
    s = slot_scores(ev.top_probs[slot:slot + 1], ev.entropy[slot:slot + 1], cfg.gamma,
                    cfg.scoring)[0]
    return Action(slot=slot, token=token, p=p, entropy=float(ev.entropy[slot]),
                  margin=float(ev.margin[slot]), score=float((s * hit).sum()))
