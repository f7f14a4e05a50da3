"""MEDAL Explorer: MCTS initialisation for diffusion language model inference."""
__version__ = "0.1.0"
