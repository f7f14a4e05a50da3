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

from .decoding import eligible_candidates, eligible_slots_array, rollout
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


# ---------------------------------------------------------------------- beam searches
#
# Two newer searches over unmasking decisions, as baselines beside MEDAL (issue 38): both
# keep a beam of partial answers and prune it by a likelihood-like score; neither builds
# a UCB tree. Each is a generator (it yields the runner's forward requests, for
# lock-step) that returns a :class:`BeamOutcome`: the winner and every state the search
# made, with its parent, so the engine can record the search as a tree (the trace's
# ``result.beam_search``) and replay the winner's path as decode steps.


class BeamNode:
    """One state of a beam search: the answer after the commitments on its path.

    ``source``: the (EvaluationBatch, row) of the parent's evaluation that the step read
    (its figures are the replayed decode step's); ``p``: the committed tokens' probabilities
    there."""

    __slots__ = ("id", "parent", "step", "answer", "slots", "tokens", "p", "score",
                 "block_score", "mode", "kept", "source", "cost", "proposal")

    def __init__(self, id: int, parent: "BeamNode | None", step: int, answer: torch.Tensor,
                 slots=(), tokens=(), p=(), score: float = 0.0, mode: str = "root",
                 block_score: float | None = None, source=None):
        self.id = id
        self.parent = parent
        self.step = step                  # the search step that made it (0: the root)
        self.answer = answer              # [L]
        self.slots = list(slots)          # what its step committed
        self.tokens = list(tokens)
        self.p = list(p)                  # each committed token's probability
        self.score = score                # the beam's cumulative score
        self.mode = mode                  # root; SOAR parallel | branch; OTS search | denoise
        self.block_score = block_score    # OTS: the likelihood estimate of its search step
        self.kept = mode == "root"        # survived its step's pruning
        self.source = source
        self.cost = None                  # (forwards, sequences, cache hits) of its step
        self.proposal = None              # OTS search step: the proposal x0 its score read

    def path(self) -> list["BeamNode"]:
        node, out = self, []
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def to_json(self, decode_masked, token_text) -> dict:
        return {"id": self.id, "parent": self.parent.id if self.parent is not None else None,
                "step": self.step, "mode": self.mode, "slots": self.slots,
                "tokens": self.tokens, "token_texts": [token_text(t) for t in self.tokens],
                "p": self.p, "score": self.score, "block_score": self.block_score,
                "kept": self.kept, "sequence": decode_masked(self.answer),
                "answer_ids": self.answer.tolist(),
                **({"proposal": self.proposal} if self.proposal is not None else {})}


class BeamOutcome:
    """What a beam search decided: its nodes (root first), the steps (which beams went in,
    which candidates they made, which were kept) and the winner."""

    def __init__(self, algorithm: str, nodes: list[BeamNode], steps: list[dict],
                 winner: BeamNode, why: str, settings: dict):
        self.algorithm = algorithm
        self.nodes = nodes
        self.steps = steps
        self.winner = winner
        self.why = why
        self.settings = settings

    def stats(self) -> dict:
        return {"steps": len(self.steps), "nodes": len(self.nodes),
                "widest_beam": max((len(s["beams"]) for s in self.steps), default=1),
                "branching_steps": sum(len(s["candidates"]) > len(s["beams"])
                                       for s in self.steps)}

    def to_json(self, decode_masked, token_text) -> dict:
        return {"algorithm": self.algorithm, "settings": self.settings,
                "nodes": [n.to_json(decode_masked, token_text) for n in self.nodes],
                "steps": self.steps, "winner": self.winner.id, "why": self.why,
                "stats": self.stats()}


def _fresh(nodes: list[BeamNode], parent: BeamNode, step: int, answer: torch.Tensor,
           slots, tokens, p, score: float, mode: str, source, block_score=None) -> BeamNode:
    node = BeamNode(len(nodes), parent, step, answer, slots, tokens, p, score, mode,
                    block_score, source)
    nodes.append(node)
    return node


def _evaluate_beams(runner: ModelRunner, beams: list[BeamNode]):
    """The beams' states in one batched forward (cached states cost none): a generator
    that yields the lock-step request and returns (batch, cost)."""
    answers = torch.stack([b.answer for b in beams])
    before = (runner.forwards, runner.sequences, runner.cache_hits)
    yield from runner.prepare(answers)
    batch = runner.evaluate_batch(answers)
    return batch, (runner.forwards - before[0], runner.sequences - before[1],
                   runner.cache_hits - before[2])


def soar_search(runner: ModelRunner, cfg):
    """SOAR: confidence-switched position beam search (Cao, Correia, Louizos, Liu, Yin,
    "Search or Accelerate: Confidence-Switched Position Beam Search for Diffusion Language
    Models", arXiv:2602.10953). Our own code, read from the paper's abstract and project
    page and checked against the authors' public sampler (github.com/duterscmy/SOAR,
    ``eval_llada8b/generate.py``, ``generate_soar``, at commit ec3eb40):

    Every step evaluates every beam in ONE batched forward. For each beam that still has
    masks, in its current block (the first with masks, ``block_length``), each masked slot
    proposes its argmax token with confidence p:

    * **accelerate** -- if some slot's p exceeds ``soar_threshold`` (their 0.95), ONE
      candidate writes the most confident such slots, at most ``soar_parallel`` (their 5),
      all at once ("parallel");
    * **search** -- otherwise ``soar_beams`` candidates (their ``max_beam_size``, 2), each
      writing ONE of the beam's most confident slots ("branch": the order is searched,
      the tokens are the argmax).

    A candidate's score is its beam's plus the p of each token it wrote (the authors' code
    adds probabilities, not log-probabilities, though the variable is named
    ``cumulative_log_prob``; we follow the code). Candidates are sorted by score (ties:
    the order they were made), repeated states dropped, and the beam becomes: the best
    candidate alone if any beam took the parallel path this step (the search collapses
    when the model is sure; their further condition that it unmasked at least
    ``min_parallel_tokens`` = 1 slot always holds), else the best ``soar_beams``. A beam
    with no mask left is carried as it is. The answer is the best beam when none has a
    mask left. ``steps`` does not apply (the search decides how many slots a step writes;
    their loop stops after ``steps`` steps, ours when every slot is written, which with
    steps = gen_length, as they run it, is the same). Tokens are the argmax (their
    temperature 0).

    A generator: yields the runner's forward requests (lock-step) and returns a
    :class:`BeamOutcome`."""
    mask_id = runner.model.mask_id
    root = BeamNode(0, None, 0, runner.initial_answer())
    nodes, steps = [root], []
    beams = [root]
    width, tau, most = cfg.soar_beams, cfg.soar_threshold, cfg.soar_parallel
    step = 0
    while any(bool((b.answer == mask_id).any()) for b in beams):
        step += 1
        open_beams = [b for b in beams if bool((b.answer == mask_id).any())]
        batch, cost = yield from _evaluate_beams(runner, open_beams)
        answer_a, masked_a, _, top_tokens, top_probs = batch.arrays
        rows = {b.id: r for r, b in enumerate(open_beams)}
        candidates, parallel = [], False
        for b in beams:
            if b.id not in rows:
                candidates.append(b)          # finished: carried as it is
                continue
            r = rows[b.id]
            eligible, _ = eligible_candidates(masked_a[r], cfg.block_length)
            conf = top_probs[r, eligible, 0]
            toks = top_tokens[r, eligible, 0]
            order = np.argsort(-conf, kind="stable")
            high = order[conf[order] > tau]
            if len(high):
                parallel = True
                pick = high[:most]
                answer = b.answer.clone()
                answer[eligible[pick]] = torch.from_numpy(toks[pick])
                candidates.append(_fresh(nodes, b, step, answer, eligible[pick].tolist(),
                                         toks[pick].tolist(), conf[pick].tolist(),
                                         b.score + float(conf[pick].sum()), "parallel",
                                         (batch, r)))
            else:
                for j in order[:width]:
                    answer = b.answer.clone()
                    answer[int(eligible[j])] = int(toks[j])
                    candidates.append(_fresh(nodes, b, step, answer, [int(eligible[j])],
                                             [int(toks[j])], [float(conf[j])],
                                             b.score + float(conf[j]), "branch", (batch, r)))
        ranked = sorted(candidates, key=lambda n: -n.score)    # stable: ties keep order
        unique, seen = [], set()
        for n in ranked:
            key = n.answer.numpy().tobytes()
            if key not in seen:
                seen.add(key)
                unique.append(n)
        beams = unique[:1] if parallel else unique[:width]
        for n in beams:
            n.kept = True
        for n in candidates:
            if n.step == step:
                n.cost = cost
        steps.append({"step": step, "beams": [b.id for b in open_beams],
                      "candidates": [n.id for n in candidates], "kept": [n.id for n in beams],
                      "collapsed": parallel, "forwards": cost[0], "sequences": cost[1],
                      "cache_hits": cost[2]})
    winner = beams[0]
    why = (f"SOAR: beam node {winner.id} has the highest score when every slot is written "
           f"({winner.score:.4f}: the sum of its tokens' probabilities)"
           + (f"; the others: " + ", ".join(f"node {b.id} {b.score:.4f}" for b in beams[1:])
              if len(beams) > 1 else ""))
    return BeamOutcome("soar", nodes, steps, winner, why,
                       {"soar_beams": width, "soar_threshold": tau, "soar_parallel": most})


#: the probability a token outside a state's recorded top-k is given (OTS's score): the
#: k-th probability, an upper bound for it (every token the tiny models read is inside)
def _token_prob(top_tokens: np.ndarray, top_probs: np.ndarray, token: int) -> float:
    hit = np.flatnonzero(top_tokens == token)
    return float(top_probs[hit[0]]) if len(hit) else float(top_probs[-1])


def ots_search(runner: ModelRunner, cfg, generator: torch.Generator | None):
    """Order-Token Search: a beam search over unmasking order AND tokens (Shen, Feng, Han,
    Wang, Chen, Shen, Leskovec, Ermon, "Improving Diffusion Language Model Decoding
    through Joint Search in Generation Order and Token Space", arXiv:2601.20339). Our own
    code. The paper's full text was not available here: this reading comes from its
    abstract and Figure 1 ("maintains beams of partial trajectories, periodically expands
    each trajectory by proposing denoising actions that change both which position to
    update (order) and what token to write (token), and then prunes partial trajectories
    using a likelihood estimation function"), a public summary of its method (beams start
    as K copies of the masked answer; expansions at block boundaries; Gumbel-noised
    tokens), a public reading of its Appendix A.4 (cost S*K*L + B*K^2*L: every beam takes
    every step, and at each of the B block boundaries K^2 candidates are each scored by one
    forward) and a public re-implementation of its Algorithm 1. What we assumed is marked
    [assumed].

    * K = ``ots_beams`` beams; the decode's ``steps`` and ``block_length`` as greedy's
      (each step writes ceil(block's masks / block's steps left) slots).
    * A **denoising action** from a beam: tokens drawn for every slot at temperature
      ``ots_temperature`` (Gumbel-max sampling = softmax(log p / tau); from the top 64
      tokens, as every sampler here), and the step's slots are the eligible ones whose
      drawn token is most probable under the clean distribution (LLaDA's low-confidence
      rule on the noisy proposal): so the noise changes both the tokens and the order.
    * At the first step of each block (a **search step**) every beam proposes K actions
      (the root, as K identical copies, K^2) and each action is scored by the **likelihood
      estimator**: the beam's proposal x0 fills every masked slot (x_full), the slots the
      action writes are masked again, and one forward gives log p(x0_i | that state) for
      each of them; the block score is their sum [assumed: only the newly written slots
      are scored, conditioned on the full proposal as future context -- a public summary
      of the paper says the score covers "only the newly revealed" part and conditions on
      the "full prediction"; the public re-implementation scores the whole block]. The
      K^2 scoring states are one batched forward. A candidate's score is its beam's plus
      its block score; repeated states keep their best [assumed]; the K best survive.
    * On the other steps each beam takes one action (its score unchanged).
    * When no beam has a mask left, the beam of the highest cumulative score is the answer.

    A generator: yields the runner's forward requests (lock-step) and returns a
    :class:`BeamOutcome`."""
    import math
    from .decoding import descending_order, token_figure
    mask_id = runner.model.mask_id
    K, tau = cfg.ots_beams, cfg.ots_temperature
    L = runner.gen_length
    steps_per_block = max(1, cfg.steps // (L // cfg.block_length))
    root = BeamNode(0, None, 0, runner.initial_answer())
    nodes, steps = [root], []
    beams, step = [root], 0
    done_in_block: dict[int, dict[int, int]] = {0: {}}     # node -> block -> steps taken
    while any(bool((b.answer == mask_id).any()) for b in beams):
        step += 1
        open_beams = [b for b in beams if bool((b.answer == mask_id).any())]
        batch, cost = yield from _evaluate_beams(runner, open_beams)
        answer_a, masked_a, _, top_tokens, top_probs = batch.arrays
        candidates, scoring, search = [], [], False
        for r, b in enumerate(open_beams):
            eligible, block = eligible_candidates(masked_a[r], cfg.block_length)
            used = done_in_block[b.id].get(block, 0)
            n = math.ceil(len(eligible) / max(1, steps_per_block - used))
            draws = 1
            if used == 0:
                search = True
                draws = K * K if b is root else K
            ev = batch.evaluations[r]
            for _ in range(draws):
                tokens = ev.sample_tokens(generator, tau).numpy() if tau > 0 \
                    else top_tokens[r, :, 0].copy()
                p = token_figure(top_probs[r], top_tokens[r], tokens)
                pick = np.sort(eligible[descending_order(p[eligible], n)[:n]])
                answer = b.answer.clone()
                answer[pick] = torch.from_numpy(tokens[pick])
                node = _fresh(nodes, b, step, answer, pick.tolist(), tokens[pick].tolist(),
                              p[pick].tolist(), b.score, "search" if used == 0 else "denoise",
                              (batch, r))
                done_in_block[node.id] = {**done_in_block[b.id], block: used + 1}
                candidates.append(node)
                if used == 0:
                    full = torch.where(b.answer == mask_id, torch.from_numpy(tokens), b.answer)
                    x_masked = full.clone()
                    x_masked[pick] = mask_id
                    node.proposal = full.tolist()
                    scoring.append((node, full, x_masked))
        extra = (0, 0, 0)
        if scoring:
            before = (runner.forwards, runner.sequences, runner.cache_hits)
            states = torch.stack([s for _, _, s in scoring])
            yield from runner.prepare(states)
            scored = runner.evaluate_batch(states)
            extra = (runner.forwards - before[0], runner.sequences - before[1],
                     runner.cache_hits - before[2])
            _, _, _, s_tokens, s_probs = scored.arrays
            for j, (node, full, _) in enumerate(scoring):
                node.block_score = float(sum(
                    math.log(max(_token_prob(s_tokens[j, i], s_probs[j, i], int(full[i])),
                                 1e-30)) for i in node.slots))
                node.score = node.parent.score + node.block_score
        finished = [b for b in beams if b not in open_beams]
        pool = finished + candidates
        ranked = sorted(pool, key=lambda n: -n.score)   # stable: ties keep their order
        unique, seen = [], set()
        for nd in ranked:
            key = nd.answer.numpy().tobytes()
            if key not in seen:
                seen.add(key)
                unique.append(nd)
        beams = unique[:K]
        for nd in beams:
            nd.kept = True
        total = tuple(a + e for a, e in zip(cost, extra))
        for nd in candidates:
            nd.cost = total
        steps.append({"step": step, "beams": [b.id for b in open_beams],
                      "candidates": [nd.id for nd in candidates],
                      "kept": [nd.id for nd in beams], "search": search,
                      "forwards": total[0], "sequences": total[1], "cache_hits": total[2]})
    winner = beams[0]
    why = (f"Order-Token Search: beam node {winner.id} has the highest cumulative "
           f"likelihood estimate when every slot is written ({winner.score:.4f})"
           + ("; the others: " + ", ".join(f"node {b.id} {b.score:.4f}" for b in beams[1:])
              if len(beams) > 1 else ""))
    return BeamOutcome("ots", nodes, steps, winner, why,
                       {"ots_beams": K, "ots_temperature": tau, "steps": cfg.steps,
                        "block_length": cfg.block_length})
