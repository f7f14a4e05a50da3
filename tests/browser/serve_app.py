"""Start the app for the browser test: ``python tests/browser/serve_app.py --server.port N``.

Runs ``streamlit run app.py`` in this process. When the trained built-in model is not in
``medal/assets/`` (a fresh checkout before training), ``builtin:countdown`` is answered by a
tiny random stand-in of the same shape, so the UI can still be driven end to end.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> int:
    import medal.models
    from streamlit.web import cli

    if "countdown" not in medal.models.builtin_names():
        import viz_support

        original = medal.models.load_model

        def load_model(spec, **options):
            if spec.strip() == "builtin:countdown":
                print("serve_app: builtin:countdown is not trained here; using a random "
                      "stand-in", file=sys.stderr)
                return viz_support.random_model()
            return original(spec, **options)

        medal.models.load_model = load_model
    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *sys.argv[1:]]
    from medal.app import warm
    warm()          # as `medal app` does
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
