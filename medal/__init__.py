"""MEDAL Explorer: MCTS initialisation for diffusion language model inference."""
from ._version import __version__
