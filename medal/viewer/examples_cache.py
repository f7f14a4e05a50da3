"""The shipped examples' frames, computed once per process and shared (read only): the app
opens an example without waiting for them."""
from __future__ import annotations

from ..views.frames import Frames


_EXAMPLES: dict = {}
_EXAMPLES_LOCK = __import__("threading").Lock()


def example_frames(name: str) -> Frames:
    """A shipped example's frames, computed once per process (and shared: read only)."""
    with _EXAMPLES_LOCK:
        frames = _EXAMPLES.get(name)
        if frames is None:
            from ..examples import list_examples, load_example
            ex = next(e for e in list_examples() if e.name == name)
            frames = Frames(f"example-{name}")
            frames.update(load_example(ex))
            _EXAMPLES[name] = frames
        return frames


def warm_examples() -> None:
    """Compute every shipped example's frames in the background, once per process, so
    that the first click on an example does not wait for them."""
    import threading
    if getattr(warm_examples, "started", False):
        return
    warm_examples.started = True

    def work():
        from ..examples import list_examples
        for ex in list_examples():
            try:
                example_frames(ex.name)
            except Exception:   # a broken example shows its error when it is opened
                pass
    threading.Thread(target=work, name="medal-warm-examples", daemon=True).start()
